"""One module per experiment: its `RunConfig` subclass, `PRESETS`, `SMOKE` and
`build(config) -> configs.parts.Experiment`, for `aninfonce_tf.runner.main`."""
