"""The model registry, loaders and cache of the diffusion pipelines (arrives with the GPU core)."""
