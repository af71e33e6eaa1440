from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from trainer.program import AdamWConfig, ProgramError, SGDConfig, build_step
from trainer.program.models import MLP, MLPConfig
from trainer.program.optim import clip_by_global_norm

CONFIG = MLPConfig(d_in=12, d_hidden=16, n_classes=5)


def batches(n: int) -> list[dict[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(7)
    return [{"x": torch.randn(8, 12, generator=g), "y": torch.randint(0, 5, (8,), generator=g)} for _ in range(n)]


def reference_run(config: SGDConfig | AdamWConfig, steps: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """torch.optim on an identical model: the semantics the functional optimizers follow."""
    torch.manual_seed(3)
    model = MLP(CONFIG)
    params = list(model.parameters())
    opt: torch.optim.Optimizer
    if isinstance(config, SGDConfig):
        opt = torch.optim.SGD(
            params, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay, nesterov=config.nesterov
        )
    else:
        opt = torch.optim.AdamW(
            params, lr=config.lr, betas=config.betas, eps=config.eps, weight_decay=config.weight_decay, foreach=False
        )
    for batch in steps:
        opt.zero_grad()
        F.cross_entropy(model(batch["x"]), batch["y"]).backward()
        if config.clip_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(params, config.clip_grad_norm, foreach=False)
        opt.step()
    return {"param/" + n: p.detach() for n, p in model.named_parameters()}


def functional_run(config: SGDConfig | AdamWConfig, steps: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    torch.manual_seed(3)
    step = build_step(MLP(CONFIG), F.cross_entropy, config)
    state = step.init_state()
    for batch in steps:
        state, _ = step.fn(state, batch)
    return state


@pytest.mark.parametrize(
    "config",
    [
        SGDConfig(lr=0.1),
        SGDConfig(lr=0.1, momentum=0.9, weight_decay=1e-3),
        SGDConfig(lr=0.05, momentum=0.9, weight_decay=1e-3, nesterov=True, clip_grad_norm=0.5),
        AdamWConfig(lr=1e-2),
        AdamWConfig(lr=1e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1, clip_grad_norm=0.3),
    ],
    ids=repr,
)
def test_functional_optimizer_follows_torch_optim(config: SGDConfig | AdamWConfig) -> None:
    steps = batches(4)
    ours = functional_run(config, steps)
    theirs = reference_run(config, steps)
    for name, p in theirs.items():
        torch.testing.assert_close(ours[name], p, rtol=2e-5, atol=2e-6, msg=name)


def test_adamw_keeps_running_beta_powers_in_fp32() -> None:
    config = AdamWConfig(lr=1e-3, betas=(0.9, 0.99))
    step = build_step(MLP(CONFIG), F.cross_entropy, config)
    state = step.init_state()
    assert state["optim/beta1_power"].dtype == torch.float32 and state["optim/beta1_power"].shape == ()
    for batch in batches(3):
        state, _ = step.fn(state, batch)
    b1 = torch.ones((), dtype=torch.float32)
    for _ in range(3):
        b1 = b1 * 0.9
    assert torch.equal(state["optim/beta1_power"], b1)


def test_sgd_without_momentum_has_no_buffers() -> None:
    state = build_step(MLP(CONFIG), F.cross_entropy, SGDConfig(lr=0.1)).init_state()
    assert all(name.startswith("param/") for name in state)


def test_clipping_scales_only_above_the_threshold() -> None:
    grads = {"a": torch.tensor([3.0, 0.0]), "b": torch.tensor([[4.0]])}
    clipped = clip_by_global_norm(grads, 1.0)
    norm = torch.sqrt((clipped["a"] ** 2).sum() + (clipped["b"] ** 2).sum())
    torch.testing.assert_close(norm, torch.tensor(1.0), rtol=1e-6, atol=0)
    unclipped = clip_by_global_norm(grads, 10.0)
    assert all(torch.equal(unclipped[k], grads[k]) for k in grads)


@pytest.mark.parametrize(
    "make",
    [
        lambda: SGDConfig(lr=0.0),
        lambda: SGDConfig(lr=0.1, momentum=1.0),
        lambda: SGDConfig(lr=0.1, nesterov=True),
        lambda: SGDConfig(lr=0.1, weight_decay=-1.0),
        lambda: AdamWConfig(lr=1e-3, betas=(0.9, 1.0)),
        lambda: AdamWConfig(lr=1e-3, eps=0.0),
        lambda: AdamWConfig(lr=1e-3, clip_grad_norm=0.0),
    ],
)
def test_bad_configs_are_refused(make: object) -> None:
    with pytest.raises(ProgramError):
        make()  # type: ignore[operator]
