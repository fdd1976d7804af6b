"""Effective concentrations: the conditional's Lambda recovered, each view's frame
matching the pixels of the view, and blocks split where the concentrations part."""

import dataclasses

import numpy as np
import pytest

from aninfonce_tf.data.augment import SimCLRAugment
from aninfonce_tf.data.effective_concentration import (
    MAX_EFFECTIVE_CONCENTRATION,
    MIN_BLOCK_GAP,
    effective_blocks,
    effective_concentration,
    latent_parts,
    view_latents,
)
from aninfonce_tf.data.rendered_pairs import RenderedPairs
from aninfonce_tf.data.renderer import CONTINUOUS, PARTS, render, sample_latents

# No crop, jitter, grayscale or flip unless a test turns one on.
STILL = SimCLRAugment(
    image_size=32,
    crop_scale=(1.0, 1.0),
    crop_ratio=(1.0, 1.0),
    flip_probability=0.0,
    jitter_probability=0.0,
    grayscale_probability=0.0,
)


def _estimate(augment: SimCLRAugment, count: int = 4000) -> dict:
    return effective_concentration(RenderedPairs(augment=augment, size=32), count)["parts"]


def test_a_normal_conditional_gives_back_its_concentration():
    # Large enough that reflections and wraps are rare.
    pairs = RenderedPairs(mode="latent", concentration=[400, 300, 200, 400, 300, 200])
    estimate = effective_concentration(pairs, count=20_000)
    expected = {"x": 400, "y": 300, "scale": 200, "rotation": 400, "object_hue": 300}
    for part, value in estimate["parts"].items():
        latent = part.rsplit("_", 1)[0] if part not in CONTINUOUS else part
        target = expected.get(latent, 200)
        assert value == pytest.approx(target, rel=0.1), part
    assert estimate["sample_size"] == 20_000
    # A latent that changes in a quarter of the pairs only is 4 times as concentrated.
    slab = dataclasses.replace(pairs, mode="spike-slab", change_probability={"x": 0.25})
    assert effective_concentration(slab, count=20_000)["parts"]["x"] == pytest.approx(
        1600, rel=0.15
    )


def test_each_augmentation_moves_only_the_parts_it_changes():
    cap = MAX_EFFECTIVE_CONCENTRATION
    assert set(_estimate(STILL).values()) == {cap}
    flips = _estimate(dataclasses.replace(STILL, flip_probability=0.5))
    # A flip turns theta into -theta: the cos never changes; x mirrors.
    moved = {part for part, value in flips.items() if value < cap}
    assert moved == {"x", "rotation_sin"}
    hue = _estimate(dataclasses.replace(STILL, jitter_probability=1.0, hue=0.2))
    assert {p for p, v in hue.items() if v < cap} == {p for p in PARTS if "hue" in p}
    # Both views gray: the hues are erased alike and do not differ.
    assert set(_estimate(dataclasses.replace(STILL, grayscale_probability=1.0)).values()) == {cap}
    gray = _estimate(dataclasses.replace(STILL, grayscale_probability=0.5))
    assert gray["object_hue_cos"] < 20 and gray["x"] == cap
    crops = _estimate(dataclasses.replace(STILL, crop_scale=(0.4, 1.0), crop_ratio=(0.75, 4 / 3)))
    assert {p for p, v in crops.items() if v < cap} == {"x", "y", "scale"}


def test_view_latents_put_the_object_where_the_view_shows_it():
    """The object's pixel centroid (its centre: the polygons' area centroid is the
    origin) in a flipped crop lies where `view_latents` says, and its area matches
    the scale there."""
    augment = dataclasses.replace(
        STILL, crop_scale=(0.6, 0.9), crop_ratio=(0.75, 4 / 3), flip_probability=0.5
    )
    latents = sample_latents(64, seed=5)
    images = render(latents, size=96)
    views, params = augment(images, seed=[1, 2])
    view, erased = view_latents({k: v.numpy() for k, v in latents.items()}, params)
    assert not erased.any()
    # The object is the brighter: its value is 1, the background's 0.45.
    coverage = np.clip((views.numpy().max(-1) - 0.45) / 0.55, 0, 1)
    centres = (np.arange(32) + 0.5) / 32
    mass = coverage.sum((1, 2))
    x = (coverage * centres[None, None, :]).sum((1, 2)) / mass
    y = (coverage * centres[None, :, None]).sum((1, 2)) / mass
    np.testing.assert_allclose(x, view["x"], atol=0.02)
    np.testing.assert_allclose(y, view["y"], atol=0.02)
    # Crops of other aspect ratios stretch the object; its area still scales as 1 / box
    # (within the resampling error of a 3-pixel object's edge).
    radius = np.sqrt(mass / 32**2 / np.pi)
    np.testing.assert_allclose(radius, view["scale"], rtol=0.12)
    assert np.corrcoef(radius, view["scale"])[0, 1] > 0.95
    flipped = params["flip"].numpy() > 0
    assert flipped.any() and (~flipped).any()
    rotation = latents["rotation"].numpy()
    np.testing.assert_allclose(np.cos(view["rotation"]), np.cos(rotation), atol=1e-5)
    np.testing.assert_allclose(
        np.sin(view["rotation"]), np.where(flipped, -1, 1) * np.sin(rotation), atol=1e-5
    )


def test_parts_are_in_units_of_a_range_two_wide_and_erased_hues_are_zero():
    latents = {name: np.array([0.0, 0.0]) for name in CONTINUOUS}
    latents.update(x=np.array([0.3, 0.7]), y=np.array([0.5, 0.5]), scale=np.array([0.09, 0.14]))
    parts = latent_parts(latents, erased=np.array([False, True]))
    assert parts["x"].tolist() == pytest.approx([-1, 1])
    assert parts["scale"].tolist() == pytest.approx([-1, 1])
    assert parts["object_hue_cos"].tolist() == pytest.approx([np.sqrt(2) / np.pi, 0])
    assert parts["rotation_cos"].tolist() == pytest.approx([np.sqrt(2) / np.pi] * 2)


def test_blocks_follow_correlations_leave_unshared_parts_out_and_keep_near_ties_together():
    correlation = {
        "x": 0.02,  # unshared: in no block
        "y": 0.69,
        "scale": 0.54,
        "rotation_cos": 1.0,  # no pair changes it: content
        "rotation_sin": -0.04,
        "object_hue_cos": 0.72,
        "x_offset": 0.31,
    }
    assert effective_blocks(correlation) == {
        "content": ("y", "rotation_cos", "object_hue_cos"),
        "style": ("scale", "x_offset"),
    }
    # Free of units: the same correlations give the same blocks, whatever Lambda_eff.
    # Parts within MIN_BLOCK_GAP of each other are not cut apart.
    assert effective_blocks({"x": 0.5, "y": 0.55}) == {"content": ("x", "y"), "style": ()}
    gap = 1 - (1 - 0.5) / MIN_BLOCK_GAP  # y's 1 / (1 - rho) exactly MIN_BLOCK_GAP times x's
    assert effective_blocks({"x": 0.5, "y": gap + 1e-6})["style"] == ("x",)
    assert effective_blocks({"x": 0.5, "y": gap - 1e-3})["style"] == ()


def test_correlations_and_unshared_parts_of_flipped_views():
    # A flip maps x to 1 - x and rotation to -rotation: a pair shares neither sign, only
    # the flip-invariant |x - 1/2| and the rotation's cos.
    flips = dataclasses.replace(STILL, flip_probability=0.5)
    estimate = effective_concentration(RenderedPairs(augment=flips, size=32), count=20_000)
    rho = estimate["correlation"]
    assert estimate["unshared"] == ["x", "rotation_sin"]
    assert abs(rho["x"]) < 0.05 and rho["x_offset"] == rho["rotation_cos"] == 1.0
    assert rho["object_hue_cos"] == 1.0
    # Hues erased in every view: no view shows them varying, so a pair shares nothing.
    gray = effective_concentration(
        RenderedPairs(augment=dataclasses.replace(STILL, grayscale_probability=1.0), size=32),
        count=2000,
    )
    hues = [part for part in PARTS if "hue" in part]
    assert all(np.isnan(gray["correlation"][part]) for part in hues)
    assert set(hues) <= set(gray["unshared"])
    blocks = effective_blocks(gray["correlation"])
    assert not set(hues) & {*blocks["content"], *blocks["style"]}
    # A part reversed between the views is shared; x_offset only stands in for an
    # unshared x.
    assert effective_blocks({"x": -0.9, "y": 0.9, "x_offset": 0.95})["content"] == ("x", "y")


def test_estimates_repeat_and_bad_counts_are_refused():
    pairs = RenderedPairs(augment=SimCLRAugment(image_size=32), size=32)
    assert pairs.effective_concentration(500, seed=1) == pairs.effective_concentration(500, seed=1)
    with pytest.raises(ValueError, match="count"):
        effective_concentration(pairs, count=1)
