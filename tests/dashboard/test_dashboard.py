"""`refereed serve` in headless Chromium, driven from pytest over the W3C WebDriver protocol (chromedriver).

A real anvil, the protocol deployed, and a dispute running: the demo's default cheater against an honest
trainer (a small task), with oracles and a watcher, ticked in a background thread. The dashboard reads
the chain on its own thread; the browser loads the page once and never reloads it. The test waits until
the page shows the game and its moves, checks that the block number on the page changes by itself (live
updates), saves a screenshot mid-dispute, waits for the task to be finalized and for the page to say so,
and saves a final screenshot: out/dashboard/dashboard-dispute.png and out/dashboard/dashboard.png.

Chromium comes from Debian's `chromium` and `chromium-driver` (scripts/setup installs them when it can,
system-wide as root, else unpacked into .tools/chromium); the test is skipped, saying why, only when no
browser can be found.
"""

from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "out" / "dashboard"


def _browser() -> tuple[str, str] | None:
    local = REPO / ".tools" / "chromium" / "usr"
    for chromium, driver in (
        (shutil.which("chromium"), shutil.which("chromedriver")),
        (str(local / "lib" / "chromium" / "chromium"), str(local / "bin" / "chromedriver")),
    ):
        if chromium and driver and Path(chromium).exists() and Path(driver).exists():
            return chromium, driver
    return None


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class WebDriver:
    """The few W3C WebDriver calls the test needs, over HTTP to chromedriver."""

    def __init__(self, chromium: str, driver: str) -> None:
        self.port = _port()
        self.proc = subprocess.Popen([driver, f"--port={self.port}"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)  # fmt: skip
        deadline = time.monotonic() + 30
        while True:
            try:
                self._call("GET", "/status")
                break
            except OSError:
                assert time.monotonic() < deadline, "chromedriver did not start"
                time.sleep(0.2)
        options = {"binary": chromium, "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                                                "--disable-dev-shm-usage", "--window-size=1400,1800"]}  # fmt: skip
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": options}}}
        self.session = self._call("POST", "/session", caps)["sessionId"]

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})  # fmt: skip
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())["value"]

    def get(self, url: str) -> None:
        self._call("POST", f"/session/{self.session}/url", {"url": url})

    def js(self, script: str) -> Any:
        return self._call("POST", f"/session/{self.session}/execute/sync", {"script": script, "args": []})

    def screenshot(self, path: Path) -> bytes:
        png = base64.b64decode(self._call("GET", f"/session/{self.session}/screenshot"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(png)
        return png

    def close(self) -> None:
        try:
            self._call("DELETE", f"/session/{self.session}")
        finally:
            self.proc.terminate()
            self.proc.wait(10)


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    found = _browser()
    if found is None:
        pytest.skip("no chromium and chromedriver: install Debian's chromium and chromium-driver (./scripts/setup "
                    "does when it runs as root or can apt-get download)")  # fmt: skip
    driver = WebDriver(*found)
    yield driver
    driver.close()


def _wait(what: str, fn: Any, timeout: float, thread: threading.Thread | None = None) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        assert time.monotonic() < deadline, f"the page did not show {what} in {timeout:.0f} s"
        time.sleep(0.3)


@pytest.mark.anvil
def test_the_dashboard_shows_a_dispute_live(browser: WebDriver, artifacts: dict[str, Artifact], tmp_path: Path) -> None:
    from offchain.agents.adversaries import CATALOGUE, DEFAULT, cast
    from offchain.agents.client import TaskOrder
    from offchain.agents.scenario import Scenario
    from offchain.chain.client import ChainClient
    from offchain.chain.deploy import deploy_all
    from offchain.contracts.protocol import Protocol
    from offchain.contracts.task_market import TaskStatus
    from offchain.dashboard import Snapshots, make_server
    from trainer.workloads import mlp_digits

    with Anvil(accounts=14) as node:
        deployer = ChainClient(node.rpc_url, node.accounts[0].private_key, artifacts=artifacts.values())
        deployment = deploy_all(deployer, artifacts=artifacts, write=False)
        workload = mlp_digits(steps=8, checkpoint_interval=4, batch_size=8, seed=11)
        trainers, oracles = cast(CATALOGUE[DEFAULT], 2, workload.config)
        scenario = Scenario(
            rpc_url=node.rpc_url, accounts=node.accounts, deployment=deployment, artifacts=artifacts,
            folder=tmp_path, order=TaskOrder(workload, reward=10**18, slots=2), trainers=trainers, oracles=oracles,
        )  # fmt: skip
        reader = Protocol.from_deployment(ChainClient(node.rpc_url), deployment, artifacts)
        snapshots = Snapshots(reader, tmp_path / "public", rpc_url=node.rpc_url).start(0.5)
        server = make_server(snapshots, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        failure: list[BaseException] = []

        def dispute() -> None:
            try:
                scenario.run(timeout_s=600, on_round=lambda: time.sleep(0.15))  # slow enough for a person to see
            except BaseException as e:  # the test's thread reports it
                failure.append(e)

        runner = threading.Thread(target=dispute, daemon=True)
        try:
            runner.start()
            browser.get(url)
            assert "Refereed Training" in browser.js("return document.title")
            _wait(
                "the posted task",
                lambda: browser.js("return document.querySelector('#tasks').innerText.includes('open')"),
                180,
            )
            blocks = [browser.js("return document.querySelector('#chain').innerText")]
            _wait("a game with moves", lambda: browser.js(
                "const g = document.querySelector('#games .game'); return g && /[1-9][0-9]* moves/.test(g.innerText) "
                "&& g.querySelectorAll('circle').length >= 3"), 300)  # fmt: skip
            blocks.append(browser.js("return document.querySelector('#chain').innerText"))
            assert blocks[0] != blocks[1], "the page did not update by itself"
            shot = browser.screenshot(OUT / "dashboard-dispute.png")
            assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 20_000
            text = browser.js("return document.body.innerText")
            assert "game 1" in text and "defender" in text and "live" in text
            runner.join(timeout=600)
            assert not failure, failure
            assert reader.market.task(1).status is TaskStatus.FINALIZED
            _wait("the finalized task", lambda: browser.js(
                "return document.querySelector('#tasks').innerText.includes('finalized')"), 30)  # fmt: skip
            _wait("the settled game", lambda: browser.js(
                "return document.querySelector('#games').innerText.includes('settled')"), 30)  # fmt: skip
            final = browser.js("return document.body.innerText")
            assert "challenger wins" in final or "defender wins" in final
            # The default cheat's node (an addmm) is decided on chain by the dot phase: no oracle question.
            games = browser.js("return document.querySelector('#games').innerText")
            assert "on chain: element game" in games and "dot game" in games and "no oracle" in games, games
            assert browser.js("return document.querySelector('#questions').innerText") == ""
            shot = browser.screenshot(OUT / "dashboard.png")
            assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 20_000
            state = json.loads(urllib.request.urlopen(url + "api/state", timeout=10).read())
            assert state["ok"] and state["tasks"][0]["status"] == "finalized" and state["timelines"]["1"]
            assert urllib.request.urlopen(url + "api/state", timeout=10).headers["Content-Type"] == "application/json"
        finally:
            server.shutdown()
            server.server_close()
            snapshots.stop()
            runner.join(timeout=5)
