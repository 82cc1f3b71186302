"""Apple-device tools beside the CLI (`cli/device.py` is their only user): `xcrun` and
`devicectl`, sideloading a bundle, and the on-device bench's runs. Nothing here runs on Linux
beyond the stand-ins the tests give it."""
