"""The open set of losses: the registry, the learned isotropic control, and a loss
defined in this file (not in the package) trained by `fit` and run by a recipe."""

import importlib
import json

import keras
import numpy as np
import pytest
from keras import ops

from aninfonce_tf import (
    AnInfoNCE,
    ContrastiveLoss,
    ContrastiveModel,
    DiagonalScaling,
    InfoNCE,
    IsotropicAnInfoNCE,
    functional,
    mlp_encoder,
    register_loss,
)
from aninfonce_tf.loss_variants import LOSS_VARIANTS, loss_variant
from aninfonce_tf.recipes import RECIPES
from aninfonce_tf.runner import identity
from tests.support import load_recipe


@keras.saving.register_keras_serializable(package="tests")
class DecoupledInfoNCE(ContrastiveLoss):
    """Decoupled contrastive loss (Yeh et al., 2022): the positive is left out of the
    denominator. Defined here, outside the package, as a user would."""

    stat_names = ("accuracy",)

    def __init__(self, temperature: float = 0.2, name: str = "decoupled", **kwargs):
        super().__init__(name=name, **kwargs)
        self.temperature = temperature

    def per_row_losses(self, z1, z2, z1_all=None, z2_all=None, row_offset=0):
        logits, positive, candidates = functional.contrastive_logits(
            z1, z2, "cosine", self.temperature, "nt_xent", z1_all, z2_all, row_offset
        )
        positive_mask = ops.one_hot(positive, ops.shape(logits)[1])
        negatives = ops.where(candidates * (1.0 - positive_mask) > 0, logits, -1e9)
        losses = ops.logsumexp(negatives, axis=-1) - ops.sum(logits * positive_mask, axis=-1)
        accuracy = functional.positive_accuracy(logits, positive, candidates)
        return losses, {"accuracy": accuracy}

    @classmethod
    def from_options(cls, options, **variant_options):
        return cls(temperature=options.infonce_temperature)

    def get_config(self):
        return {**super().get_config(), "temperature": self.temperature}


@pytest.fixture
def decoupled():
    register_loss("decoupled")(DecoupledInfoNCE)
    yield "decoupled"
    del LOSS_VARIANTS["decoupled"]


def _pairs(rows=256, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 6)).astype("float32")
    return x, x + 0.05 * rng.normal(size=x.shape).astype("float32")


def test_a_loss_defined_outside_the_package_trains_with_fit():
    keras.utils.set_random_seed(0)
    model = ContrastiveModel(mlp_encoder(6, 4, [32]))
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=DecoupledInfoNCE())
    history = model.fit(_pairs(), batch_size=64, epochs=8, verbose=0).history
    assert {"loss", "accuracy", "alignment", "uniformity"} <= set(history)
    assert "candidates" not in history  # only the statistics the loss declares
    assert history["loss"][-1] < history["loss"][0] - 0.5
    assert history["accuracy"][-1] > 0.5


def test_a_loss_that_returns_undeclared_statistics_is_refused():
    class Undeclared(DecoupledInfoNCE):
        stat_names = ()

    model = ContrastiveModel(mlp_encoder(6, 4, [8]))
    model.compile(loss=Undeclared())
    with pytest.raises(ValueError, match=r"returned the statistics \['accuracy'\]"):
        model.fit(_pairs(64), batch_size=32, epochs=1, verbose=0)


def test_a_user_loss_runs_through_a_recipe_by_name(decoupled, tmp_path):
    recipe = load_recipe("synthetic")
    results = recipe.main(["--smoke", "--losses", f"{decoupled},infonce", "--out", str(tmp_path)])
    assert set(results) == {decoupled, "infonce"}
    assert results[decoupled]["steps"] == results["infonce"]["steps"] == 40
    assert 0.0 < results[decoupled]["linear_r2"] <= 1.0
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["run"]["config"]["losses"] == f"{decoupled},infonce"
    assert (tmp_path / decoupled / "model.keras").exists()


def test_registering_checks_the_class_and_keeps_names_apart(decoupled):
    with pytest.raises(TypeError, match="ContrastiveLoss subclass"):
        register_loss("not_a_loss")(dict)
    with pytest.raises(ValueError, match="already registered to InfoNCE"):
        register_loss("infonce")(DecoupledInfoNCE)
    register_loss(decoupled)(DecoupledInfoNCE)  # the same class again: a re-run cell
    loss, scaling = loss_variant(decoupled, infonce_temperature=0.3)
    assert isinstance(loss, DecoupledInfoNCE) and loss.temperature == 0.3 and scaling is None


def test_the_learned_isotropic_variant_is_cosine_infonce_at_a_learned_temperature():
    loss, scaling = loss_variant("aninfonce_isotropic", initial_concentration=4.0)
    assert type(loss) is IsotropicAnInfoNCE and scaling.tied
    rng = np.random.default_rng(1)
    u = functional.l2_normalize(rng.normal(size=(8, 5)).astype("float32"))
    v = functional.l2_normalize(u + 0.3 * rng.normal(size=(8, 5)).astype("float32"))
    np.testing.assert_allclose(
        float(loss(scaling(u), scaling(v))), float(InfoNCE(temperature=0.25)(u, v)), rtol=1e-5
    )
    # It starts where AnInfoNCE's Lambda_hat is centred, without AnInfoNCE's noise.
    np.testing.assert_allclose(np.asarray(scaling.concentration), [4.0] * 5, rtol=1e-6)


def test_the_isotropic_concentration_is_trained_and_stays_one_value():
    keras.utils.set_random_seed(0)
    loss, scaling = loss_variant("aninfonce_isotropic", initial_concentration=2.0)
    model = ContrastiveModel(mlp_encoder(6, 4, [32]), scaling=scaling)
    model.compile(optimizer="adam", loss=loss, concentration_optimizer=5e-2)
    model.fit(_pairs(), batch_size=64, epochs=4, verbose=0)
    learned = np.asarray(model.concentration)
    assert learned.shape == (4,) and np.ptp(learned) == 0.0
    assert learned[0] > 2.5  # close positives: a sharper (lower) temperature pays
    assert len(model.scaling.trainable_variables[0].numpy()) == 1


def test_the_isotropic_loss_refuses_a_per_dimension_scaling():
    model = ContrastiveModel(mlp_encoder(6, 4, [8]), scaling=DiagonalScaling(5.0))
    with pytest.raises(ValueError, match="tied=True"):
        model.compile(loss=IsotropicAnInfoNCE())
    with pytest.raises(ValueError, match="one float"):
        DiagonalScaling([1.0, 2.0], tied=True)


def test_registering_refuses_another_class_of_the_same_name_or_other_options(decoupled):
    class InfoNCE(DecoupledInfoNCE):  # a user's class named like the package's
        pass

    with pytest.raises(ValueError, match="already registered"):
        register_loss("infonce")(InfoNCE)
    with pytest.raises(ValueError, match="already registered"):
        register_loss("aninfonce", hard_negatives=True)(AnInfoNCE)


def test_statistics_named_like_the_models_own_logs_are_refused():
    class Shadowing(DecoupledInfoNCE):
        stat_names = ("loss",)

    with pytest.raises(ValueError, match=r"\['loss'\]"):
        register_loss("shadowing")(Shadowing)
    with pytest.raises(ValueError, match=r"\['loss'\]"):
        ContrastiveModel(mlp_encoder(6, 4, [8])).compile(loss=Shadowing())


def test_compiling_with_another_loss_logs_only_its_statistics():
    model = ContrastiveModel(mlp_encoder(6, 4, [8]))
    model.compile(loss=InfoNCE())
    model.compile(loss=DecoupledInfoNCE())
    history = model.fit(_pairs(64), batch_size=32, epochs=1, verbose=0).history
    assert "accuracy" in history and "candidates" not in history
    assert sorted(m.name for m in model.metrics).count("accuracy") == 1


def test_a_model_with_the_isotropic_concentration_reloads_exactly(tmp_path):
    loss, scaling = loss_variant("aninfonce_isotropic", initial_concentration=3.0)
    model = ContrastiveModel(mlp_encoder(6, 4, [8]), scaling=scaling)
    model.compile(optimizer="adam", loss=loss, concentration_optimizer=1e-2)
    model.fit(_pairs(64), batch_size=32, epochs=1, verbose=0)
    model.save(tmp_path / "model.keras")
    restored = keras.models.load_model(tmp_path / "model.keras")
    assert restored.scaling.tied and type(restored.contrastive_loss) is IsotropicAnInfoNCE
    np.testing.assert_array_equal(restored.concentration, model.concentration)
    x = _pairs(4)[0]
    np.testing.assert_allclose(restored.embed(x), model.embed(x), rtol=1e-6)


def test_a_loss_in_the_users_own_file_is_named_on_the_command_line(tmp_path, monkeypatch):
    from aninfonce_tf.configs.synthetic import PRESETS
    from aninfonce_tf.runner.cli import parse_config

    monkeypatch.setattr(identity, "USER_CODE", [])  # the import is recorded there
    mine = tmp_path / "my_losses.py"
    mine.write_text(
        "from aninfonce_tf import InfoNCE, register_loss\n"
        "register_loss('my_infonce')(type('MyInfoNCE', (InfoNCE,), {}))\n"
    )
    try:
        config, _ = parse_config(PRESETS, ["--import", str(mine), "--losses", "my_infonce"])
        assert config.loss_names() == ["my_infonce"]
        loss, scaling = loss_variant("my_infonce", infonce_temperature=0.3)
        assert type(loss).__name__ == "MyInfoNCE" and loss.temperature == 0.3 and scaling is None
    finally:
        LOSS_VARIANTS.pop("my_infonce", None)
    with pytest.raises(SystemExit):
        parse_config(PRESETS, ["--import", str(tmp_path / "missing.py")])


def test_a_loss_without_a_blockwise_form_refuses_a_block_size(decoupled):
    with pytest.raises(ValueError, match="'decoupled' has no blockwise form"):
        loss_variant(decoupled, block_size=64)
    assert loss_variant("aninfonce", block_size=64)[0].block_size == 64


# The presets that start Lambda_hat at a value of their own: tuned to start below every
# true Lambda of their data (docs/tuning.md, point 1), not where InfoNCE is.
OWN_START = {
    ("synthetic", "quick"): 5.0,
    ("synthetic", "paper-linear"): 2.0,
    ("synthetic", "paper-linear-fast"): 2.0,
    ("synthetic", "paper-two-valued"): 2.0,
    ("synthetic", "content-style"): 5.0,
    ("synthetic", "dose-response"): 2.0,
    ("mnist_vae", "digits"): 5.0,
    ("mnist_vae", "mnist"): 5.0,
}


def test_every_preset_starts_anisotropic_lambda_hat_at_one_over_its_infonce_temperature():
    seen = set()
    for recipe in RECIPES.values():
        module = importlib.import_module(f"aninfonce_tf.configs.{recipe.config}")
        for preset, config in module.PRESETS.items():
            _, scaling = loss_variant("aninfonce", **config.resolved().loss_options())
            expected = OWN_START.get((recipe.config, preset), 1 / config.infonce_temperature)
            assert scaling.initial_concentration == pytest.approx(expected), (recipe, preset)
            seen.add((recipe.config, preset))
    assert set(OWN_START) <= seen
    # The images' presets, AnInfoNCE and InfoNCE start equal: CIFAR10 at tau 0.5, ImageNet 0.1.
    assert {("cifar10", "cifar10"), ("imagenet", "imagenet"), ("photos", "photos")} <= seen
    # A flag still sets it; 0 derives it again.
    _, scaling = loss_variant("aninfonce", initial_concentration=3.0, infonce_temperature=0.1)
    assert scaling.initial_concentration == 3.0
    _, scaling = loss_variant("aninfonce_isotropic", infonce_temperature=0.1)
    assert scaling.initial_concentration == pytest.approx(10.0)
