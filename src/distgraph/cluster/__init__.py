"""Cluster vocabulary shared by the launcher and the runtime, and importing neither: the
`ip_config` file, which hosts are this one, and the environment through which the launcher
places each process in its job. Light on purpose (no torch), so commands fail fast."""
