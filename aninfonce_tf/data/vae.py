"""A VAE whose frozen decoder renders latents as digit images (the paper's MNIST
experiment), trained on tfds' MNIST or scikit-learn's digits upsampled to 28x28."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from aninfonce_tf.data.options import without_autotune

IMAGE_SHAPE = (28, 28, 1)
SOURCES = ("digits", "mnist")


def digit_images(source: str = "digits", data_dir: str | None = None) -> np.ndarray:
    """`[N, 28, 28, 1]` float32 images in [0, 1].

    Args:
        source: `"digits"` (scikit-learn's, upsampled) or `"mnist"` (tfds', prepared).
        data_dir: tfds data directory for `"mnist"` (default: tfds' own).

    Example:

    >>> images = digit_images("digits")
    >>> images.shape, images.dtype.name, float(images.max())
    ((1797, 28, 28, 1), 'float32', 1.0)
    """
    if source == "digits":
        from sklearn.datasets import load_digits

        images = load_digits().images.astype("float32")[..., None] / 16.0
        return tf.image.resize(images, IMAGE_SHAPE[:2], method="bilinear").numpy()
    if source == "mnist":
        import tensorflow_datasets as tfds

        builder = tfds.builder("mnist", data_dir=data_dir)
        try:
            dataset = builder.as_dataset(split="train")  # never downloads
        except AssertionError as missing:  # tfds' "could not find data in ..."
            raise ValueError(
                f"MNIST is not prepared in {builder.data_dir!r}. On a machine with internet "
                'run `python -c "import tensorflow_datasets as tfds; '
                "tfds.builder('mnist').download_and_prepare()\"` and copy the data directory "
                "here (or pass its --data-dir), or use --vae-source digits, which needs no "
                "download."
            ) from missing
        batches = dataset.map(lambda example: example["image"]).batch(4096)
        return np.concatenate(list(tfds.as_numpy(batches))).astype("float32") / 255.0
    raise ValueError(f"Unknown VAE `source` {source!r}; expected one of {SOURCES}.")


def vae_decoder(latent_dim: int, name: str = "decoder") -> keras.Model:
    """Latents -> 28x28x1 images in [0, 1] (Dense, two transposed convolutions)."""
    return keras.Sequential(
        [
            keras.Input((latent_dim,)),
            keras.layers.Dense(7 * 7 * 32, activation="relu"),
            keras.layers.Reshape((7, 7, 32)),
            keras.layers.Conv2DTranspose(32, 3, strides=2, padding="same", activation="relu"),
            keras.layers.Conv2DTranspose(16, 3, strides=2, padding="same", activation="relu"),
            keras.layers.Conv2D(1, 3, padding="same", activation="sigmoid"),
        ],
        name=name,
    )


def vae_encoder(latent_dim: int, name: str = "vae_encoder") -> keras.Model:
    """Images -> the posterior's mean and log-variance, concatenated."""
    return keras.Sequential(
        [
            keras.Input(IMAGE_SHAPE),
            keras.layers.Conv2D(16, 3, strides=2, padding="same", activation="relu"),
            keras.layers.Conv2D(32, 3, strides=2, padding="same", activation="relu"),
            keras.layers.Flatten(),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(2 * latent_dim),
        ],
        name=name,
    )


@keras.saving.register_keras_serializable(package="aninfonce_tf")
class VAE(keras.Model):
    """A convolutional VAE with a N(0, I) prior; `beta` weighs the KL term.

    Args:
        latent_dim: dimension of the latent space.
        beta: weight of the KL divergence (below 1 keeps more latents in use).
        seed: seed of the reparametrisation noise.

    Example:

    >>> vae = VAE(latent_dim=4)
    >>> vae.compile(keras.optimizers.Adam(1e-3))
    >>> history = vae.fit(np.random.rand(64, 28, 28, 1).astype("float32"), epochs=1, verbose=0)
    >>> tuple(vae.decoder(np.zeros((2, 4), "float32")).shape)
    (2, 28, 28, 1)
    """

    def __init__(self, latent_dim: int = 10, beta: float = 1.0, seed: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.latent_dim = latent_dim
        self.beta = beta
        self.seed = seed
        self.encoder = vae_encoder(latent_dim)
        self.decoder = vae_decoder(latent_dim)
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.reconstruction_tracker = keras.metrics.Mean(name="reconstruction")
        self.kl_tracker = keras.metrics.Mean(name="kl")

    def call(self, images, training=False):
        mean, _ = self._posterior(images)
        return self.decoder(mean, training=training)

    def _posterior(self, images):
        statistics = self.encoder(images)
        return statistics[:, : self.latent_dim], statistics[:, self.latent_dim :]

    @property
    def metrics(self):
        return [self.reconstruction_tracker, self.kl_tracker]

    def train_step(self, data):
        images = data[0] if isinstance(data, tuple) else data
        with tf.GradientTape() as tape:
            mean, log_variance = self._posterior(images)
            noise = keras.random.normal(tf.shape(mean), seed=self.seed_generator)
            z = mean + tf.exp(0.5 * log_variance) * noise
            reconstruction = self.decoder(z, training=True)
            # Bernoulli likelihood per pixel, summed over the image.
            pixels = keras.losses.binary_crossentropy(images, reconstruction, axis=[])
            reconstruction_loss = tf.reduce_mean(tf.reduce_sum(pixels, axis=[1, 2, 3]))
            kl = -0.5 * tf.reduce_mean(
                tf.reduce_sum(1 + log_variance - tf.square(mean) - tf.exp(log_variance), axis=1)
            )
            loss = reconstruction_loss + self.beta * kl
        variables = self.trainable_variables
        self.optimizer.apply(tape.gradient(loss, variables), variables)
        self.reconstruction_tracker.update_state(reconstruction_loss)
        self.kl_tracker.update_state(kl)
        return {metric.name: metric.result() for metric in self.metrics}

    def get_config(self):
        return {
            **super().get_config(),
            "latent_dim": self.latent_dim,
            "beta": self.beta,
            "seed": self.seed,
        }


def train_vae(
    latent_dim: int = 10,
    source: str = "digits",
    steps: int = 3000,
    beta: float = 1.0,
    seed: int = 0,
    data_dir: str | None = None,
) -> tuple[VAE, np.ndarray]:
    """`(vae, images)`: a VAE trained on the digit images of `source` (batch 128, Adam
    1e-3), and those images.

    Args:
        latent_dim: the latents' dimension.
        source: one of `SOURCES` (`digit_images`).
        steps: training steps, at least 1.
        beta: weight of the KL term.
        seed: seed of the weights and of the shuffling.
        data_dir: tfds' data directory (None: its default).

    Example:

    >>> vae, images = train_vae(2, steps=1)
    training the VAE decoder (digits, 2 latents, 1 steps)
    >>> vae.decoder.output_shape, images.shape
    ((None, 28, 28, 1), (1797, 28, 28, 1))
    """
    if steps < 1:
        raise ValueError(f"`steps` must be at least 1; got {steps}.")
    images = digit_images(source, data_dir)
    keras.utils.set_random_seed(seed)
    vae = VAE(latent_dim=latent_dim, beta=beta, seed=seed)
    vae.compile(keras.optimizers.Adam(1e-3), jit_compile=True)
    data = without_autotune(
        tf.data.Dataset.from_tensor_slices(images)
        .shuffle(len(images), seed=seed)
        .repeat()
        .batch(128, drop_remainder=True)
        .prefetch(tf.data.AUTOTUNE)
    )
    print(f"training the VAE decoder ({source}, {latent_dim} latents, {steps} steps)")
    vae.fit(data, steps_per_epoch=steps, epochs=1, verbose=0)
    return vae, images


__all__ = ["SOURCES", "VAE", "digit_images", "train_vae", "vae_decoder", "vae_encoder"]
