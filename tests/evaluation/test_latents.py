"""Per-latent scores of rendered images: disjoint splits, circular latents on (cos, sin),
linear against nonlinear readouts, and the evaluator at both levels of a model."""

import keras
import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics import r2_score
from sklearn.model_selection import GridSearchCV, PredefinedSplit
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from aninfonce_tf.data.rendered_pairs import RenderedPairs
from aninfonce_tf.data.renderer import CONTINUOUS, LATENTS, PARTS, sample_latents
from aninfonce_tf.evaluation.callbacks import scalar_items
from aninfonce_tf.evaluation.latents import (
    KERNEL_ALPHAS,
    KERNEL_GAMMAS,
    LatentEvaluator,
    kernel_ridge_r2,
    latent_scores,
    latent_targets,
    split_indices,
)
from aninfonce_tf.layers import DiagonalScaling, projection_head
from aninfonce_tf.models import ContrastiveModel


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # As the evaluator fits: BLAS threads spinning for busy cores slow the fits ~50x.
    with threadpool_limits(1, user_api="blas"):
        yield


def _latents(count, seed=0):
    return {name: value.numpy() for name, value in sample_latents(count, seed).items()}


def _exact_features(latents):
    """Every continuous target and a one-hot shape: all linearly readable."""
    targets = latent_targets(latents)
    one_hot = np.eye(LATENTS["shape"].classes)[latents["shape"]]
    return np.concatenate([targets[name] for name in CONTINUOUS] + [one_hot], axis=1)


def test_targets_put_circular_latents_on_the_circle_and_leave_classes_out():
    latents = {"x": np.array([0.3, 0.7]), "rotation": np.array([0.0, np.pi / 2]),
               "object_hue": np.array([0.25, 1.0]), "shape": np.array([0, 1])}  # fmt: skip
    targets = latent_targets(latents)
    assert sorted(targets) == ["object_hue", "rotation", "x"]
    np.testing.assert_allclose(targets["x"], [[0.3], [0.7]])
    np.testing.assert_allclose(targets["rotation"], [[1, 0], [0, 1]], atol=1e-12)
    # A hue of 1 is a hue of 0: the wrap costs nothing.
    np.testing.assert_allclose(targets["object_hue"], [[0, 1], [1, 0]], atol=1e-12)


def test_splits_are_disjoint_and_cover_every_row():
    fit, validation, test = split_indices(1000, seed=3)
    assert (len(fit), len(validation), len(test)) == (500, 250, 250)
    together = np.concatenate([fit, validation, test])
    np.testing.assert_array_equal(np.sort(together), np.arange(1000))
    with pytest.raises(ValueError, match="Too few"):
        split_indices(5)


def test_exact_features_score_one_and_noise_scores_nothing():
    latents = _latents(1200)
    stages = []
    exact = latent_scores(_exact_features(latents), latents, nonlinear=True, progress=stages.append)
    assert stages == ["linear probes", "kernel ridge", "class probes"]
    for kind in ("linear_r2", "nonlinear_r2"):
        assert min(exact[kind].values()) > 0.98, exact[kind]
    assert exact["shape_accuracy"] == 1.0
    noise = np.random.default_rng(0).normal(size=(1200, 16))
    scores = latent_scores(noise, latents, nonlinear=True)
    for kind in ("linear_r2", "nonlinear_r2"):
        # Scored on rows no fit and no hyperparameter choice has seen: about zero.
        assert max(scores[kind].values()) < 0.03, scores[kind]
    assert scores["shape_accuracy"] < 0.3  # chance: 0.2


def test_a_raw_angle_is_a_poor_linear_readout_of_a_circular_latent():
    latents = _latents(1200)
    raw = np.stack([latents["rotation"], latents["x"]], 1)
    scores = latent_scores(raw, latents, nonlinear=True)
    # From a uniform angle t on [0, 2 pi) no line predicts cos t (corr 0) and sin t
    # only with R^2 = corr^2 = 1 / (var t var sin t) = 6 / pi^2: the mean is 3 / pi^2.
    assert scores["linear_r2"]["rotation"] == pytest.approx(3 / np.pi**2, abs=0.05)
    # The kernel ridge reads (cos, sin) off the angle.
    assert scores["nonlinear_r2"]["rotation"] > 0.95
    assert scores["linear_r2"]["x"] > 0.99


def test_the_kernel_ridge_recovers_what_no_linear_readout_can():
    latents = _latents(1200)
    # x as an angle of 3 radians either side of 0: one-to-one, far from linear.
    angle = 15 * (latents["x"] - 0.5)
    features = np.stack([np.cos(angle), np.sin(angle)], 1)
    scores = latent_scores(features, {"x": latents["x"]}, nonlinear=True)
    assert scores["nonlinear_r2"]["x"] > 0.95
    assert scores["linear_r2"]["x"] < scores["nonlinear_r2"]["x"] - 0.2  # 0.70 measured


def test_kernel_hyperparameters_are_those_of_the_best_validation_score():
    """Against scikit-learn's grid search on a predefined validation fold."""
    rng = np.random.default_rng(1)
    features = rng.normal(size=(400, 3))
    targets = np.sin(2 * features[:, :1]) + 0.1 * rng.normal(size=(400, 1))
    fit, validation, test = split_indices(400, seed=0)
    scaled = StandardScaler().fit(features[fit]).transform(features)
    rows = np.concatenate([fit, validation])
    search = GridSearchCV(
        KernelRidge(kernel="rbf"),
        {"alpha": KERNEL_ALPHAS, "gamma": [g / 3 for g in KERNEL_GAMMAS]},
        scoring="r2",
        cv=PredefinedSplit(np.r_[np.full(len(fit), -1), np.zeros(len(validation))]),
        refit=False,
    ).fit(scaled[rows], targets[rows, 0])
    best = KernelRidge(kernel="rbf", **search.best_params_).fit(scaled[fit], targets[fit, 0])
    expected = r2_score(targets[test, 0], best.predict(scaled[test]))
    ours = kernel_ridge_r2(features, targets, fit, validation, test)
    assert ours[0] == pytest.approx(expected, abs=1e-9)
    assert expected > 0.9


def test_block_means_are_the_means_of_their_latents_or_parts():
    latents = _latents(800)
    features = _exact_features(latents)[:, :3]  # x, y, scale only
    blocks = RenderedPairs(mode="latent").blocks()
    scores = latent_scores(features, latents, blocks=blocks, nonlinear=False)
    for block, members in blocks.items():
        expected = np.mean([scores["part_linear_r2"][name] for name in members])
        assert scores["block_linear_r2"][block] == pytest.approx(expected)
    # A circular latent's R^2 is the mean of its parts'.
    parts = scores["part_linear_r2"]
    assert scores["linear_r2"]["rotation"] == pytest.approx(
        (parts["rotation_cos"] + parts["rotation_sin"]) / 2
    )
    by_latent = latent_scores(features, latents, blocks={"all": ("x", "rotation")}, nonlinear=False)
    assert by_latent["block_linear_r2"]["all"] == pytest.approx(
        (scores["linear_r2"]["x"] + scores["linear_r2"]["rotation"]) / 2
    )
    with pytest.raises(ValueError, match="rotation_tan"):
        latent_scores(features, latents, blocks={"b": ("rotation_tan",)}, nonlinear=False)
    assert blocks["content"] == ("x", "y", "scale")  # x is shared: x_offset stays out
    assert scores["block_linear_r2"]["content"] > 0.99
    # |x - 1/2| is scored as a part of its own: no linear map of x reads it.
    assert parts["x_offset"] < 0.05
    assert scores["block_linear_r2"]["style"] < 0.05


def test_bad_input_raises_naming_it():
    latents = _latents(100)
    with pytest.raises(ValueError, match="unknown latents"):
        latent_scores(np.zeros((100, 2)), {**latents, "size": np.zeros(100)})
    with pytest.raises(ValueError, match="one value per row"):
        latent_scores(np.zeros((90, 2)), latents)
    with pytest.raises(ValueError, match="both"):
        LatentEvaluator(np.zeros((100, 4)), latents, views=np.zeros((100, 4)))


class _Model:
    """The backbone sees every latent, the projector nothing."""

    scaling = None

    def __call__(self, rows):
        return np.asarray(rows)[:, :-16]

    def embed(self, rows, scaled=True):
        return np.asarray(rows)[:, -16:]


def test_the_evaluator_scores_both_levels_and_names_every_scalar():
    latents = _latents(1000)
    noise = np.random.default_rng(0).normal(size=(1000, 16))
    rows = np.concatenate([_exact_features(latents), noise], 1)
    blocks = RenderedPairs(mode="latent").blocks()
    evaluator = LatentEvaluator(rows, latents, blocks=blocks, nonlinear=False, batch_size=300)
    scores = evaluator.evaluate(_Model())
    assert scores["backbone"]["linear_r2_mean"] > 0.98
    assert scores["projector"]["linear_r2_mean"] < 0.03
    assert scores["backbone"]["shape_accuracy"] == 1.0
    assert set(scalar_items(scores)) == evaluator.score_names(anisotropic=False)


def test_the_evaluator_on_a_contrastive_model_with_the_readout():
    pairs = RenderedPairs(mode="augment", size=16)
    images, latents = pairs.evaluation_set(64)
    views, params = pairs.readout_set(64)
    encoder = keras.Sequential(
        [keras.Input((16, 16, 3)), keras.layers.AveragePooling2D(4), keras.layers.Flatten()]
    )
    model = ContrastiveModel(
        encoder, projector=projection_head([], 4), scaling=DiagonalScaling(2.0)
    )
    model.build((None, 16, 16, 3))
    evaluator = LatentEvaluator(images, latents, pairs.blocks(), views, params, nonlinear=False)
    stages = []
    scores = evaluator.evaluate(model, progress=stages.append)
    assert set(scalar_items(scores)) >= evaluator.score_names(anisotropic=True)
    assert stages == [
        f"{level}: {stage}"
        for level in ("backbone", "projector")
        for stage in ("features", "linear probes", "class probes", "readout")
    ]
    assert 0.0 <= scores["projector"]["augmentation_readout"] <= 1.0
    assert scores["lambda_hat"] == pytest.approx([2.0] * 4)
    assert scores["lambda_hat_low_dimensions"] == 0  # none below a tenth of the median
    # Mean colours of 4x4 patches carry the background hue; 4 random projections less.
    assert (
        scores["backbone"]["linear_r2"]["background_hue"]
        > scores["projector"]["linear_r2"]["background_hue"]
    )


def test_the_evaluator_refuses_blocks_of_unknown_parts_before_any_training():
    latents = _latents(40)
    with pytest.raises(ValueError, match="rotation_tan"):
        LatentEvaluator(np.zeros((40, 4)), latents, blocks={"style": ("x", "rotation_tan")})


def test_orientation_over_parts_identity_rotation_and_blocks():
    latents = _latents(1500)
    targets = latent_targets(latents)
    parts = np.concatenate([targets[name] for name in CONTINUOUS], axis=1)
    blocks = RenderedPairs(mode="latent").blocks()
    exact = latent_scores(-3 * parts[:, ::-1], latents, blocks=blocks, nonlinear=False)
    assert exact["mcc"] == pytest.approx(1.0, abs=1e-9)
    assert min(exact["subspace_r2"].values()) > 0.999
    width = parts.shape[1]
    rotated = parts @ np.linalg.qr(np.random.default_rng(0).normal(size=(width, width)))[0]
    mixed = latent_scores(rotated, latents, blocks=blocks, nonlinear=False)
    assert mixed["mcc"] < 0.85
    assert mixed["mcc"] == pytest.approx(mixed["mcc_floor"], abs=4 * mixed["mcc_floor_sd"])
    # A rotation keeps every part's R^2 (the derived |x - 1/2| was never linear).
    assert min(mixed["part_linear_r2"][part] for part in PARTS) > 0.99
    assert min(mixed["subspace_r2"].values()) < 0.9


def test_a_block_of_derived_parts_has_block_r2_but_no_subspace_score():
    latents = _latents(400)
    blocks = {"style": ("scale", "x_offset"), "offset": ("x_offset",)}
    features = _exact_features(latents)
    scores = latent_scores(features, latents, blocks=blocks, nonlinear=False)
    assert set(scores["subspace_r2"]) == {"style"}  # x_offset has no matched dimension
    assert set(scores["block_linear_r2"]) == {"style", "offset"}
    names = LatentEvaluator(np.zeros((400, 4)), latents, blocks=blocks).score_names(True)
    assert "backbone/subspace_r2/style" in names
    assert "backbone/subspace_r2/offset" not in names
    assert "backbone/block_linear_r2/offset" in names
