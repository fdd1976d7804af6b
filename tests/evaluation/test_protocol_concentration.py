"""The shape of a learned Lambda_hat reported beside every image table: how many of its
dimensions sit below a tenth of its median."""

import numpy as np

from aninfonce_tf.evaluation.protocol import concentration_scores


class _Model:
    def __init__(self, concentration):
        self.scaling = type("Scaling", (), {"concentration": np.asarray(concentration)})()


def test_low_dimensions_count_entries_below_a_tenth_of_the_median():
    # large-objects' shape: one dimension at 0.12, fifteen at 36-78.
    shape = [0.12] + list(np.linspace(36, 78, 15))
    assert concentration_scores(_Model(shape))["lambda_hat_low_dimensions"] == 1
    assert concentration_scores(_Model([5.0] * 16))["lambda_hat_low_dimensions"] == 0
    # The bound is strict: a tenth of the median exactly is not low.
    assert concentration_scores(_Model([1.0, 10.0, 10.0]))["lambda_hat_low_dimensions"] == 0
    assert concentration_scores(_Model([0.99, 10.0, 10.0]))["lambda_hat_low_dimensions"] == 1
    assert concentration_scores(object()) == {}
    # A diverged Lambda_hat has no shape to report, rather than a misleading count.
    assert concentration_scores(_Model([np.nan, 5.0, 5.0]))["lambda_hat_low_dimensions"] is None
    assert concentration_scores(_Model([np.inf, np.inf, 1.0]))["lambda_hat_low_dimensions"] is None
