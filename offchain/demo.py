"""The main job: a whole refereed training task on a real local chain, with a cheater caught.

`./scripts/demo` runs `python -m offchain.demo`. It compiles and deploys the contracts on
a fresh anvil, then plays one task with the protocol's agents in one process (a
`Scenario` driven by a `Devnet`): a client posts the MLP-on-digits task with the reward in
escrow; k = 3 trainers join with bonds and train it with the RepOps interpreter (progress
bars), two honestly and one with a cheat from the adversary catalogue (`--cheat NAME`,
`--cheat none` for three honest trainers); they submit their checkpoint lists; the watcher
opens a game for each pair that disagrees, and every move of every game is shown as it
lands on chain (game, side, stage, interval or position, gas), then the oracle's answer
(or, for a node the element table covers, the element game's moves on the ElementReferee and the
element the contract computed; `--no-element-referee` sends every node to the oracle) and the settlement; the cheater is
slashed, the task is finalized and everyone withdraws. The summary says which phase decided each
game (`phase` in the report: the oracle, the element phase, or neither).
When every agent waits for a window, the devnet moves the chain's clock forward; the
report says by how much.

Writes `out/demo/report.json` and `out/demo/report.png` (loss curves and the game's
timeline), prints a summary, and exits 1 if the honest side did not win.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from offchain.agents.adversaries import CATALOGUE, DEFAULT, Adversary, cast
from offchain.agents.client import TaskOrder
from offchain.agents.oracle import OracleAgent
from offchain.agents.scenario import OracleRole, Scenario, ScenarioResult, TrainerRole, oracle_roles
from offchain.agents.strategy import HONEST
from offchain.agents.view import FeedLine, GameFeed, RichObserver, render, stage_name
from offchain.chain.anvil import Anvil
from offchain.chain.build import compile_contracts, repo_root
from offchain.chain.client import ChainClient
from offchain.chain.deploy import deploy_all
from offchain.contracts.dispute_game import Side
from offchain.contracts.protocol import Protocol
from offchain.contracts.task_market import TaskStatus
from offchain.game.element_table import DOT_OPS, SUM_OPS, TRACE_OPS, trace_function
from trainer.workloads import Workload, mlp_digits

ETH = 10**18
NONE = "none"
ACCOUNTS = 20  # anvil's funded accounts: the deployer, the client, k trainers, the oracles (5, or 7 for
# the lying-oracle entry), the watcher


def config_from_options(
    quick: bool, cheat: str, steps: int | None, interval: int | None, batch: int | None
) -> DemoConfig:
    """The run's config from the command line: the quick or full defaults, with the options given over them
    (everything else, e.g. how many intervals the client replays, stays the default's)."""
    base = DemoConfig.quick() if quick else DemoConfig()
    return dataclasses.replace(
        base,
        cheat=None if cheat == NONE else cheat,
        steps=steps or base.steps,
        interval=interval or base.interval,
        batch=batch or base.batch,
    )


@dataclass(frozen=True, slots=True)
class DemoConfig:
    """The task the demo posts, and who trains it."""

    cheat: str | None = DEFAULT  # a CATALOGUE name; None: every trainer is honest
    steps: int = 256  # T
    interval: int = 16  # c: T / c = 16 checkpoint intervals
    batch: int = 64  # 64 digits x 64 float32 = 16 KiB per batch tensor (a proof carries <= 24 KiB)
    seed: int = 7
    trainers: int = 3  # k
    arity: int = 4  # N
    reward: int = 3 * ETH
    timeout_s: float = 900.0
    client_samples: int = 2  # checkpoint intervals of each revealed result the client replays
    element_referee: bool | None = None  # bind the ElementReferee (None: the deployment's default)

    @classmethod
    def quick(cls, cheat: str | None = DEFAULT) -> DemoConfig:
        """A small run for tests: 32 steps, 4 checkpoint intervals, all of which the client replays (so
        that its verdicts do not depend on which intervals it drew)."""
        return cls(cheat=cheat, steps=32, interval=8, batch=16, client_samples=4)


class Timeline:
    """Wall time of each phase the demo runs itself (the agents' phases come from their journals)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.phases: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str, what: str) -> Iterator[None]:
        self.console.rule(f"[bold]{name}[/]: {what}", align="left")
        t0 = time.perf_counter()
        yield
        self.phases[name] = round(time.perf_counter() - t0, 3)


def cast_trainers(cfg: DemoConfig, workload: Workload) -> tuple[Adversary | None, list[TrainerRole], list[OracleRole]]:
    if cfg.cheat is None:
        return None, [TrainerRole(f"honest-{i + 1}", HONEST) for i in range(cfg.trainers)], list(oracle_roles())
    adversary = CATALOGUE[cfg.cheat]
    trainers, oracles = cast(adversary, cfg.trainers, workload.config)
    return adversary, trainers, oracles


def run(out_dir: Path, cfg: DemoConfig, console: Console) -> dict[str, Any]:
    timeline = Timeline(console)
    with timeline.phase("build", "compile the contracts (py-solc-x through the solc-js shim)"):
        artifacts = compile_contracts()
        console.print(f"compiled {len(artifacts)} units")

    with ExitStack() as stack:
        with timeline.phase("chain", "start a local anvil"):
            node = stack.enter_context(Anvil(accounts=ACCOUNTS))
            console.print(f"anvil on {node.rpc_url}, chain id {node.chain_id}")
        with timeline.phase("deploy", "deploy the protocol contracts"):
            deployer = ChainClient(node.rpc_url, node.accounts[0].private_key, artifacts=artifacts.values())
            deployment = deploy_all(
                deployer, artifacts=artifacts, out_dir=out_dir / "deployments", element_referee=cfg.element_referee
            )
            for name, rec in deployment.contracts.items():
                console.print(f"{name} at {rec.address}")

        workload = mlp_digits(steps=cfg.steps, checkpoint_interval=cfg.interval, batch_size=cfg.batch, seed=cfg.seed)
        adversary, trainer_roles, oracle_roles = cast_trainers(cfg, workload)
        cheaters = [t.name for t in trainer_roles if not t.strategy.honest]
        what = f"{', '.join(cheaters)} cheats ({adversary.name})" if adversary is not None else "all honest"
        console.rule(f"[bold]task[/]: {len(trainer_roles)} trainers, {what}; post, train, submit", align="left")
        if adversary is not None:
            console.print(f"cheat: {adversary.name}: {adversary.summary}")
        folder = out_dir / "agents"
        shutil.rmtree(folder, ignore_errors=True)
        observer = RichObserver(console, feed_shown=True)
        scenario = Scenario(
            rpc_url=node.rpc_url,
            accounts=node.accounts,
            deployment=deployment,
            artifacts=artifacts,
            folder=folder,
            order=TaskOrder(workload, reward=cfg.reward, arity=cfg.arity, slots=len(trainer_roles)),
            trainers=trainer_roles,
            oracles=oracle_roles,
            observer=observer,
            client_samples=cfg.client_samples,
        )
        names = {acct.address: name for name, acct in scenario.keys.items()}
        names[node.accounts[0].address] = "deployer"
        feed = GameFeed(scenario.protocol(), names, from_block=deployer.block_number() + 1)
        watch = RoundWatch(scenario, feed, observer)
        with observer.live():
            result = scenario.run(timeout_s=cfg.timeout_s, on_round=watch.round)
        watch.round()  # the last blocks
        report = build_report(adversary, scenario, result, watch, workload)
        report["phases_s"] = {**timeline.phases, **{p.name: round(p.seconds, 3) for p in result.phases}}
        report["phase_spans_s"] = {p.name: [p.start, p.end] for p in result.phases}
        write_plot(out_dir / "report.png", report)
    return report


class RoundWatch:
    """What the demo looks at after every devnet round: new transactions, chain-time warps, replays."""

    def __init__(self, scenario: Scenario, feed: GameFeed, observer: RichObserver) -> None:
        self.scenario = scenario
        self.feed = feed
        self.observer = observer
        self.warped = 0
        self.warps: list[tuple[float, int]] = []  # (unix s, chain seconds skipped)
        self.first_game_at: float | None = None
        self.replay_base: dict[str, int] = {}  # witness steps when the first game opened
        self.replayed: dict[str, int] = {}  # witness steps since then (last seen)

    def round(self) -> None:
        lines = self.feed.poll()
        for line in lines:
            self._show(line)
        devnet = self.scenario.devnet
        if devnet is not None and devnet.warped_s > self.warped:
            skipped = devnet.warped_s - self.warped
            self.warped = devnet.warped_s
            self.warps.append((time.time(), skipped))
            self._print(f"[dim]devnet: every agent waits for a chain time; the clock moved {skipped:,} s forward[/]")
        if self.first_game_at is not None:
            now = self.scenario.steps_replayed()
            for name, steps in now.items():
                if name in self.replay_base and steps >= self.replay_base[name]:
                    self.replayed[name] = steps - self.replay_base[name]

    def _show(self, line: FeedLine) -> None:
        if line.kind == "open" and self.first_game_at is None:
            self.first_game_at = line.at
            self.replay_base = self.scenario.steps_replayed()
            self.replayed = dict.fromkeys(self.replay_base, 0)
            self.observer.close()
            self.observer.console.rule(
                "[bold]dispute[/]: every move is a transaction; the contracts referee", align="left"
            )
        if line.kind in ("task", "payout") or (line.kind == "oracle" and line.question_id is None):
            return  # the agents' own notes say it (joined, submitted, finalized, withdrew, registered)
        self._print(render(line, since=self.first_game_at))

    def _print(self, text: str) -> None:
        self.observer.print(text)


# -- the report ----------------------------------------------------------------------------


def _eth(wei: int) -> float:
    return round(wei / ETH, 9)


def build_report(
    adversary: Adversary | None,
    scenario: Scenario,
    result: ScenarioResult,
    watch: RoundWatch,
    workload: Workload,
) -> dict[str, Any]:
    p = scenario.protocol()
    task_id = result.task_id
    spec = p.market.spec_of(task_id)
    honest = [n for n, t in zip(scenario.trainers, scenario.trainer_roles, strict=True) if t.strategy.honest]
    cheaters = [n for n in scenario.trainers if n not in honest]
    views = {n: p.market.trainer_of(task_id, scenario.keys[n].address) for n in scenario.trainers}
    honest_groups = {views[n].group for n in honest if views[n].submitted}
    finalized = result.status is TaskStatus.FINALIZED
    checks = {
        "honest_trainers_not_eliminated": all(not result.eliminated[n] for n in honest),
        "cheaters_eliminated": all(result.eliminated[n] or not views[n].submitted for n in cheaters),
        "finalized_to_the_honest_group": finalized
        and len(honest_groups) == 1
        and result.winning_group == next(iter(honest_groups)),
        "honest_trainers_paid": all(result.net(n) > 0 for n in honest),
        "client_replayed_the_honest_result": all(result.verdicts.get(g) == "verified" for g in honest_groups),
    }

    # games: outcome, where they ended, how, and their moves per side
    games: list[dict[str, Any]] = []
    feed_games = watch.feed.games
    for g in result.games:
        tally = feed_games.get(g.game_id)
        view = p.game.game_of(g.game_id)
        node = None
        if view.question_id:
            node = p.oracle.question(view.question_id).node
        elif view.element_game:
            node = view.position
        how, ended_in = "proof", None  # a game that ends in a move was decided by its proof
        for line in watch.feed.lines:
            if line.game_id != g.game_id or line.kind not in ("move", "timeout", "resolve"):
                continue
            if line.kind == "resolve":
                how = "element phase" if line.function == "resolveElement" else "oracle"
            elif line.kind == "timeout":
                how = "timeout"
            ended_in = stage_name(line.stage) if line.stage is not None else ended_in
        # The phase that decided the node: the recompute oracle, the on-chain element phase, or neither (the
        # game ended before a node was decided: a refused proof, a timeout before the node reveal).
        phase = "oracle" if view.question_id else "element" if view.element_game else None
        dot = _dot_of(p, int(view.element_game))
        games.append(
            {
                "game_id": g.game_id,
                "defender": g.defender,
                "challenger": g.challenger,
                "outcome": g.outcome.name.lower(),
                "decided_by": how,
                "phase": phase,  # "oracle", "element" (decided on chain) or None
                "element_game": int(view.element_game) or None,
                # mm / addmm: the DotReferee game that decided the element (docs/game.md 2.8), else None
                "dot": dot,
                # a transcendental function: the TraceReferee game that decided it (docs/game.md 2.9), else None
                "trace": _trace_of(p, int(view.element_game)),
                # a sum: the SumReferee game that decided it (docs/game.md 2.10), else None
                "sum": _sum_of(p, int(view.element_game)),
                "ended_in": ended_in,  # the stage the game was in when it ended
                "isolated_step": g.step,
                "node": node,
                "question_id": int(view.question_id) or None,
                "moves": g.moves,
                "moves_by_side": {
                    "defender": tally.moves[Side.DEFENDER] if tally else None,
                    "challenger": tally.moves[Side.CHALLENGER] if tally else None,
                },
                "gas_by_side": {
                    "defender": tally.gas[Side.DEFENDER] if tally else None,
                    "challenger": tally.gas[Side.CHALLENGER] if tally else None,
                },
                "round_bound": p.game.round_bound(spec.config()),
            }
        )

    # what was recomputed to settle the dispute
    total_nodes = spec.steps * spec.node_count
    oracles = {n: a for n, a in scenario.oracles.items() if isinstance(a, OracleAgent)}
    per_oracle = {n: a.nodes_recomputed for n, a in oracles.items()}
    recomputed = sum(per_oracle.values())  # every oracle recomputes a question's node: to answer, check or vote
    questions = sorted({g["question_id"] for g in games if g["question_id"]})
    distinct = sorted({(g["isolated_step"], g["node"]) for g in games if g["node"] is not None})
    c = spec.checkpoint_interval
    trainer_side = {
        n: {
            "steps_replayed": watch.replayed.get(n, 0),
            "checkpoint_intervals": round(watch.replayed.get(n, 0) / c, 3),
            "within_goal": watch.replayed.get(n, 0) <= spec.arity * c,
        }
        for n in scenario.trainers
    }

    balances = {}
    for name in result.balances_before:
        addr = scenario.keys[name].address
        balances[name] = {
            "before_wei": str(result.balances_before[name]),
            "after_wei": str(result.balances_after[name]),
            "net_wei": str(result.net(name)),
            "before_eth": _eth(result.balances_before[name]),
            "after_eth": _eth(result.balances_after[name]),
            "net_eth": _eth(result.net(name)),
            "held_by_contracts_wei": str(
                int(p.market.credit_of(addr)) + int(p.oracle.credit_of(addr)) + int(p.oracle.bond_of(addr))
            ),
        }
    gas = {
        n: {"gas": result.gas[n], "fee_wei": str(result.fees[n]), "fee_eth": _eth(result.fees[n])} for n in result.gas
    }
    losses = {n: scenario.trainers[n].db.losses(task_id) for n in scenario.trainers}
    tx_times = {e.tx: e.at for e in result.journal if e.kind == "tx"}
    since = watch.first_game_at or result.started_at
    timeline = [{**line.to_json(), "t": round(tx_times.get(line.tx, line.at) - since, 3)} for line in watch.feed.lines]
    dispute = next((ph for ph in result.phases if ph.name == "dispute"), None)
    return {
        "stage": "agents",
        "task_id": task_id,
        "workload": {
            "name": workload.name,
            "steps": spec.steps,
            "checkpoint_interval": c,
            "checkpoint_intervals": spec.steps // c,
            "batch_size": spec.batch_size,
            "node_count": spec.node_count,
            "arity": spec.arity,
            "seed": spec.seed,
            "bond_wei": str(result.bond),
            "reward_wei": str(result.reward),
        },
        "cheat": None
        if adversary is None
        else {
            "name": adversary.name,
            "summary": adversary.summary,
            "strategy": next(str(t.strategy.summary) for t in scenario.trainer_roles if not t.strategy.honest),
            "cheaters": cheaters,
            "lying_oracle": adversary.lying_oracle,
            "decided_by": adversary.decided_by,
        },
        "trainers": {n: ("cheater" if n in cheaters else "honest") for n in scenario.trainers},
        "honest_won": all(
            v for k, v in checks.items() if k not in ("honest_trainers_paid", "client_replayed_the_honest_result")
        ),
        "checks": checks,
        "status": result.status.name.lower(),
        "winning_group": result.winning_group,
        "verdicts": {str(g): v for g, v in sorted(result.verdicts.items())},  # the client's replays, per group
        "eliminated": result.eliminated,
        "games": games,
        "rounds": {
            str(g["game_id"]): {"moves": g["moves"], **{f"{s}_moves": v for s, v in g["moves_by_side"].items()}}
            for g in games
        },
        "recompute": {
            "referee": {
                "questions": len(questions),
                "nodes_recomputed": recomputed,
                "oracles": len(oracles),
                "nodes_recomputed_by": per_oracle,
                "distinct_nodes": [{"step": s, "node": n} for s, n in distinct],
                "training_nodes": total_nodes,
                "fraction": recomputed / total_nodes,
                "fraction_distinct": len(distinct) / total_nodes,
                "per_question": "1 node of 1 step (<= one step)",
            },
            "trainers": trainer_side,
            "trainer_goal_intervals": spec.arity,
        },
        "gas": gas,
        "balances": balances,
        "warped_s": result.warped_s,
        "warped": (
            f"the devnet moved the chain's clock forward by {result.warped_s:,} s in total "
            f"({len(watch.warps)} times) while every agent was waiting for a window or deadline; "
            "no wall time was spent waiting"
        ),
        "dispute_s": round(dispute.seconds, 3) if dispute else None,
        "scenario_wall_s": round(result.wall_s, 3),
        "losses": {n: [v for _, v in sorted(ls.items())] for n, ls in losses.items()},
        "timeline": timeline,
        "crashes": result.crashes,
        "rpc_failures": result.rpc_failures,
    }


# -- the picture ---------------------------------------------------------------------------


def write_plot(path: Path, report: dict[str, Any]) -> None:
    """The loss curves, how far each run is from an honest one, and the games' moves over wall time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(12, 8.5))
    grid = fig.add_gridspec(2, 2, height_ratios=[1, 1.1], width_ratios=[1.6, 1])
    ax_loss, ax_diff, ax_game = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1]), fig.add_subplot(grid[1, :])
    losses_by = report["losses"]
    honest = [n for n, role in report["trainers"].items() if role == "honest"]
    for name, losses in losses_by.items():
        cheat = report["trainers"][name] == "cheater"
        ax_loss.plot(
            range(len(losses)),
            losses,
            label=f"{name}{' (cheats)' if cheat else ''}",
            lw=1.6 if cheat else 1.0,
            ls="--" if cheat else "-",
            color="tab:red" if cheat else None,
            alpha=0.9,
        )
    steps = {g["isolated_step"] for g in report["games"] if g["isolated_step"] is not None}
    for s in steps:
        for ax in (ax_loss, ax_diff):
            ax.axvline(s, color="tab:red", lw=0.8, ls=":", label=f"step {s}: isolated by the game")
    w = report["workload"]
    ax_loss.set_title(f"training loss: MLP on digits, {w['steps']} steps, batch {w['batch_size']}", fontsize=10)
    ax_loss.set_xlabel("step")
    ax_loss.set_ylabel("cross-entropy")
    ax_loss.legend(loc="upper right", fontsize=8)
    ax_loss.grid(alpha=0.3)

    # The curves lie on top of each other: how far each run is from the first honest one.
    ref = losses_by[honest[0]] if honest else []
    for name, losses in losses_by.items():
        if name == (honest[0] if honest else None):
            continue
        cheat = report["trainers"][name] == "cheater"
        diff = [abs(a - b) for a, b in zip(losses, ref, strict=False)]
        ax_diff.plot(range(len(diff)), diff, label=name, color="tab:red" if cheat else None, lw=1.2)
    ax_diff.set_yscale("symlog", linthresh=1e-7)
    top = max((abs(a - b) for ls in losses_by.values() for a, b in zip(ls, ref, strict=False)), default=0.0)
    ax_diff.set_ylim(0, max(1e-6, 3 * top))
    ax_diff.set_title(f"|loss - loss of {honest[0] if honest else '?'}|: bit-identical until a cheat", fontsize=10)
    ax_diff.set_xlabel("step")
    ax_diff.legend(loc="upper left", fontsize=8)
    ax_diff.grid(alpha=0.3)

    timeline = report["timeline"]
    game_ids = sorted({t["game"] for t in timeline if t["game"] is not None})
    if not game_ids:
        ax_game.text(0.5, 0.5, "no game: every trainer submitted the same checkpoints", ha="center", va="center")
        ax_game.set_axis_off()
    else:
        lanes: dict[tuple[int, str], int] = {}
        labels = []
        for g in game_ids:
            players: dict[str, Any] = next((x for x in report["games"] if x["game_id"] == g), {})
            for side in ("defender", "challenger"):
                lanes[(g, side)] = len(lanes)
                who = players.get(side, "")
                labels.append(f"game {g} {side}\n{who}")
        stage_colors: dict[str, Any] = {}
        cmap = plt.get_cmap("tab10")
        for t in timeline:
            if t["kind"] != "move":
                continue
            color = stage_colors.setdefault(t["stage"], cmap(len(stage_colors) % 10))
            ax_game.scatter(t["t"], lanes[(t["game"], t["side"])], color=color, s=28, zorder=3)
        for stage, color in stage_colors.items():
            ax_game.scatter([], [], color=color, s=28, label=stage)
        marks = {  # what a mark between a game's two lanes stands for, by the call it was
            "RecomputeOracle.answer": ("*", "tab:purple", "oracle answered"),
            "RecomputeOracle.challenge": ("*", "tab:orange", "answer challenged"),
            "RecomputeOracle.draw": ("*", "tab:cyan", "oracle drawn"),
            "RecomputeOracle.commitVote": ("*", "tab:olive", "committee vote committed"),
            "RecomputeOracle.revealVote": ("*", "tab:brown", "committee vote revealed"),
            "RecomputeOracle.reassign": ("*", "tab:gray", "question re-assigned"),
            "RecomputeOracle.settle": ("*", "tab:pink", "oracle answer final"),
            "DisputeGame.timeout": ("X", "tab:red", "clock ran out"),
            "DisputeGame.resolveOracle": ("P", "tab:purple", "resolved by the oracle"),
            "TaskMarket.settleDispute": ("X", "black", "settled: loser slashed"),
        }
        seen: set[str] = set()
        for t in timeline:
            if t["call"] not in marks or t["game"] is None:
                continue
            marker, color, label = marks[t["call"]]
            y = (lanes[(t["game"], "defender")] + lanes[(t["game"], "challenger")]) / 2
            ax_game.scatter(
                t["t"], y, marker=marker, s=110, color=color, zorder=4,
                label=None if label in seen else label,
            )  # fmt: skip
            seen.add(label)
        for t in timeline:
            if t["kind"] == "task" and t["call"].endswith("finalize"):
                ax_game.axvline(t["t"], color="tab:green", lw=1, ls="--", label="task finalized")
        ax_game.set_yticks(range(len(labels)), labels, fontsize=8)
        ax_game.set_ylim(-0.7, len(labels) - 0.3)
        ax_game.set_xlabel("wall seconds since the first game opened")
        ax_game.set_title(
            f"the dispute on chain: each dot a move (one transaction); the devnet skipped {report['warped_s']:,} "
            "chain seconds",
            fontsize=10,
        )
        ax_game.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
        ax_game.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# -- the summary ---------------------------------------------------------------------------


def summary(report: dict[str, Any], console: Console) -> None:
    cheat = report["cheat"]
    w = report["workload"]
    t = Table(show_header=False, box=None, pad_edge=False)
    t.add_column(style="bold")
    t.add_column()
    t.add_row(
        "task",
        f"{w['name']}: T = {w['steps']} steps, c = {w['checkpoint_interval']} "
        f"({w['checkpoint_intervals']} intervals), batch {w['batch_size']}, M = {w['node_count']} "
        f"operators per step, arity N = {w['arity']}",
    )
    t.add_row("cheat", f"{cheat['name']}: {cheat['summary']}" if cheat else "none (three honest trainers)")
    for g in report["games"]:
        where = [f"in {g['ended_in']}"] if g["ended_in"] and g["decided_by"] not in ("oracle", "element phase") else []
        if g.get("phase") == "element" and g.get("dot"):
            d = g["dot"]
            where.append(
                f"(element game {g['element_game']}, dot game {d['game']}: {d['how']}, on chain, no oracle asked)"
            )
        elif g.get("phase") == "element" and g.get("trace"):
            tg = g["trace"]
            where.append(
                f"(element game {g['element_game']}, trace game {tg['game']} of {tg['function']}: {tg['how']}, "
                "on chain, no oracle asked)"
            )
        elif g.get("phase") == "element":
            where.append(f"(element game {g['element_game']}, computed on chain, no oracle asked)")
        if g["isolated_step"] is not None:
            where.append(f"at step {g['isolated_step']}" + (f", node {g['node']}" if g["node"] is not None else ""))
        sides = g["moves_by_side"]
        t.add_row(
            f"game {g['game_id']}",
            f"{g['defender']} defends vs {g['challenger']}: {g['outcome'].replace('_', ' ')} by "
            f"{' '.join([g['decided_by'], *where])}; {g['moves']} moves ({sides['defender']} defender, "
            f"{sides['challenger']} challenger)",
        )
    ref = report["recompute"]["referee"]
    if not report["games"]:
        recomputed = "nothing (no dispute: every trainer submitted the same checkpoints)"
    else:
        recomputed = (
            f"{ref['oracles']} oracles recomputed {ref['nodes_recomputed']} node(s) in all, for "
            f"{ref['questions']} question(s), of the run's {ref['training_nodes']:,} "
            f"({100 * ref['fraction']:.4f}%); each one node of one step, to answer or to check the answer"
            if ref["nodes_recomputed"]
            else "no recomputation (decided on chain, without the oracle)"
        )
        replayed = ", ".join(
            f"{n} {v['steps_replayed']} steps ({_intervals(v['checkpoint_intervals'])})"
            for n, v in report["recompute"]["trainers"].items()
        )
        goal = _intervals(report["recompute"]["trainer_goal_intervals"])
        recomputed += f"; trainers replayed {replayed} (goal: <= N = {goal})"
    t.add_row("recomputed", recomputed)
    if report["verdicts"]:
        t.add_row(
            "client",
            "replayed sampled intervals of each result: "
            + ", ".join(f"group {g} {v}" for g, v in report["verdicts"].items()),
        )
    ph = report["phases_s"]
    t.add_row("wall time", " · ".join(f"{k} {v:.1f} s" for k, v in ph.items()) + f" · total {report['wall_s']:.1f} s")
    t.add_row("chain time", f"{report['warped_s']:,} s fast-forwarded by the devnet while every agent waited")
    console.print(t)

    parties = Table("party", "role", "gas", "fees (ETH)", "net (ETH)", "still staked (ETH)", "eliminated")
    for name, b in report["balances"].items():
        role = report["trainers"].get(name, name.rstrip("-0123456789"))
        elim = report["eliminated"].get(name)
        parties.add_row(
            name,
            role,
            f"{report['gas'][name]['gas']:,}",
            f"{report['gas'][name]['fee_eth']:.6f}",
            f"{b['net_eth']:+.6f}",
            f"{int(b['held_by_contracts_wei']) / ETH:.4f}",
            "" if elim is None else ("[red]yes[/]" if elim else "no"),
        )
    console.print(parties)
    for check, ok in report["checks"].items():
        console.print(f"{'[green]ok[/]' if ok else '[red]FAILED[/]'}  {check.replace('_', ' ')}")


def _trace_of(p: Protocol, element_game: int) -> dict[str, object] | None:
    """The trace game that decided element game `element_game` (a transcendental function's node), or None."""
    op = int(p.referee.game_of(element_game).op) if element_game and p.referee is not None else 0
    if op not in TRACE_OPS:
        return None
    assert p.referee is not None
    dot = p.referee.dot()
    tid = dot.traced_by(element_game)
    if not tid:
        return None
    tv = dot.trace().game_of(tid)
    steps = dot.trace()._logs("StepRecomputed", {"gameId": tid})
    how = f"step {int(steps[0]['step'])} (of 0..{tv.steps - 1}) recomputed" if steps else "a clock ran out"
    return {"game": tid, "function": trace_function(op), "how": how}


def _sum_of(p: Protocol, element_game: int) -> dict[str, object] | None:
    """The sum game that decided element game `element_game` (a `sum.dim_IntList` node), and how, or None."""
    if not element_game or p.referee is None or p.referee.game_of(element_game).op not in SUM_OPS:
        return None
    dot = p.referee.dot()
    sid = dot.summed_by(element_game)
    if not sid:
        return None
    summer = dot.sum()
    sv = summer.game_of(sid)
    term = summer._logs("TermComputed", {"gameId": sid})
    refuted = summer._logs("Refuted", {"gameId": sid})
    if term:
        how = f"term {int(term[0]['at'])} of L = {sv.length} recomputed"
    elif refuted:
        how = f"the defender's claim refuted by term {int(refuted[0]['at'])}"
    elif sv.moves <= 1 and int(sv.outcome) == 1:
        how = "decided by the claim (L = 0, a NaN or both infinities)"
    else:
        how = "a clock ran out"
    return {"game": sid, "length": sv.length, "element": sv.element, "moves": sv.moves, "how": how}


def _dot_of(p: Protocol, element_game: int) -> dict[str, object] | None:
    """The dot game that decided element game `element_game` (an mm or addmm node), and how, or None."""
    if not element_game or p.referee is None or p.referee.game_of(element_game).op not in DOT_OPS:
        return None
    dot = p.referee.dot()
    did = dot.taken_over(element_game)
    if not did:
        return None
    dv = dot.game_of(did)
    term = dot._logs("TermComputed", {"gameId": did})
    refuted = dot._logs("Refuted", {"gameId": did})
    if term:
        how = f"term {int(term[0]['at'])} of K = {dv.k} recomputed"
    elif refuted:
        how = f"the defender's {('row', 'column')[int(refuted[0]['which'])]} exponent refuted"
    elif dv.moves <= 1 and int(dv.outcome) == 1:
        how = "decided by the claim (K = 0 or a non-finite input)"
    else:
        how = "a clock ran out"
    return {"game": did, "k": dv.k, "element": dv.element, "moves": dv.moves, "how": how}


def _intervals(x: float) -> str:
    return f"{x:g} interval{'' if x == 1 else 's'}"


def main(
    cheat: Annotated[
        str,
        typer.Option(
            help=f"the cheating trainers' strategy: one of {', '.join(sorted(CATALOGUE)) or '(none yet)'}, "
            f"or '{NONE}' for three honest trainers",
        ),
    ] = DEFAULT,
    steps: Annotated[
        int | None, typer.Option(help="training steps T (default 256; 32 with --quick; 24 with --ledger)")
    ] = None,
    interval: Annotated[int | None, typer.Option(help="checkpoint interval c, divides T (default 16)")] = None,
    batch: Annotated[int | None, typer.Option(help="batch size, at most 96 (default 64)")] = None,
    quick: Annotated[bool, typer.Option(help="a small run (32 steps, c = 8, batch 16), for tests")] = False,
    out: Annotated[Path, typer.Option(help="where report.json and report.png go")] = Path("out/demo"),
    ledger: Annotated[
        bool,
        typer.Option(
            "--ledger",
            help="instead: the training ledger on anvil (four contributors, three builders), paid by attribution",
        ),
    ] = False,
    misattribute: Annotated[
        bool, typer.Option(help="with --ledger: one builder misattributes; the ledger freezes, the pool is refunded")
    ] = False,
    element_referee: Annotated[
        bool | None,
        typer.Option(
            "--element-referee/--no-element-referee",
            help="bind the ElementReferee: a disputed elementwise node (add, sub, mul, div, neg, reciprocal, sqrt, "
            "abs, relu, where) or matrix product (mm, addmm: the dot phase) is decided on chain, without the oracle "
            "(default: bound)",
            show_default=False,
        ),
    ] = None,
) -> None:
    console = Console(width=None if sys.stdout.isatty() else 120, highlight=False)
    if ledger:
        from offchain.ledger.demo import STEPS as LEDGER_STEPS
        from offchain.ledger.demo import run as run_ledger

        out_dir = ((repo_root() / out) if not out.is_absolute() else out) / "ledger"
        report = run_ledger(console, out_dir, steps=steps or LEDGER_STEPS, misattribute=misattribute)
        if not all(report["checks"].values()):
            sys.exit(1)
        return
    if cheat != NONE and cheat not in CATALOGUE:
        typer.echo(
            f"error: --cheat {cheat!r} is not in the catalogue: {', '.join(sorted(CATALOGUE))}, or {NONE}", err=True
        )
        raise typer.Exit(2)
    cfg = dataclasses.replace(
        config_from_options(quick, cheat, steps, interval, batch), element_referee=element_referee
    )
    if cfg.steps % cfg.interval or cfg.batch > 96 or min(cfg.steps, cfg.interval, cfg.batch) < 1:
        typer.echo(
            "error: --interval must divide --steps, and --batch be 1..96 (a batch proof carries <= 24 KiB)", err=True
        )
        raise typer.Exit(2)
    out_dir = (repo_root() / out) if not out.is_absolute() else out
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    try:
        report = run(out_dir, cfg, console)
    except KeyboardInterrupt:  # anvil and the bars are stopped on the way out
        typer.echo("interrupted", err=True)
        raise typer.Exit(130) from None
    report["wall_s"] = round(time.perf_counter() - t0, 3)
    (out_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    console.rule("[bold]summary[/]", align="left")
    summary(report, console)
    console.print(f"report: {out_dir / 'report.json'}, {out_dir / 'report.png'}  ({report['wall_s']:.1f} s)")
    if not report["honest_won"]:
        sys.exit(1)


if __name__ == "__main__":
    typer.run(main)
