"""A wrapped run of STEPS steps that can kill itself (SIGKILL) before a step, or resume.

usage: resume_run.py PATH STEPS KILL_AT RESUME   (KILL_AT -1: never; RESUME 0 or 1)
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from zkdv_cases import make_proof, train_step

import zkdv


def main() -> None:
    path, steps, kill_at, resume = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
    proof, model, opt = make_proof(path, policy=zkdv.SamplingPolicy.DEBUGCheckEvery(3), interval=4, resume=resume)
    print("resume_step", proof.resume_step, flush=True)
    for t in range(proof.resume_step, steps):
        if t == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        train_step(proof, model, opt, t)
    proof.close()


if __name__ == "__main__":
    main()
