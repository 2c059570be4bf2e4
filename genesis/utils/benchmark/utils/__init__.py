"""The parts of ``genesis.utils.benchmark`` in torch's module layout: ``common`` (TaskSpec, Measurement), ``timer``
(Timer) and ``compare`` (Compare)."""
