"""The publisher's S3Gen parts shared by Chatterbox and Chatterbox Turbo: the flow (token encoder,
CFM estimator and its host Euler loops) and the HiFT vocoder, each as export-ready graphs and the
host steps around them; and the half of a T3 + S3Gen model both write alike: the bundle
(`export`), the pipeline's S3Gen steps and chunk loop (`pipeline`), the port (`port`), the
bench's figures (`bench`) and `voxport tokenize` (`text_chunks`). Not a model (no
``MODEL_NAME``): the models import it, it imports no model.
"""
