"""One module per experiment: its config dataclass (a `RunConfig` with its own
fields), `PRESETS`, `SMOKE` and `build(config) -> configs.parts.Experiment`. The
recipes hand them to `aninfonce_tf.runner.main`."""
