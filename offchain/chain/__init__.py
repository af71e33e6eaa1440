"""The chain side's plumbing: build contracts (`build`), run anvil (`anvil`), a typed RPC
client (`client`), deployment (`deploy`) and the errors they raise (`errors`).

Import from the submodules; this package imports nothing itself, so the CLI's offline
commands start without loading web3.
"""
