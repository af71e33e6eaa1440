"""`refereed serve`: a local, read-only web dashboard of the protocol's state, from the chain and the store.

`Snapshots` reads the chain (tasks, entrants, groups, games, oracle questions, every transaction as a
feed line) on a background thread every `interval` seconds and keeps the last snapshot; `serve` answers
`GET /` with one static page and `GET /api/state` with that snapshot as JSON. The page polls the
endpoint and redraws, so it updates live. Nothing is sent to the chain and nothing is written.
"""

from offchain.dashboard.server import DashboardError, Snapshots, make_server

__all__ = ["DashboardError", "Snapshots", "make_server"]
