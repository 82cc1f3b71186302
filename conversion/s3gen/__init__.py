"""The publisher's S3Gen parts shared by Chatterbox and Chatterbox Turbo: the flow (token encoder,
CFM estimator and its host Euler loops) and the HiFT vocoder, each as export-ready graphs and the
host steps around them. Not a model (no ``MODEL_NAME``): the models import it, it imports no model.
"""
