"""One module per experiment: its config dataclass (a `RunConfig` with its own
fields), `PRESETS`, `SMOKE` and `build(config) -> experiment.Experiment`. The
recipes hand them to `aninfonce_tf.experiment.main`."""
