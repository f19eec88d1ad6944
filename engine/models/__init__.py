"""Built-in models. Each module has ``build(**dims) -> (module, inputs)``; weights are drawn from
torch's global generator, which the measuring child seeds first, so builds are deterministic."""
