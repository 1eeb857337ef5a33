"""Diffusion pipelines on diffusers models (the GPU inference core); models from models/."""
