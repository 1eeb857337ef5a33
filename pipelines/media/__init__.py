"""Media code every pipeline family shares, builtin and diffusion alike: fitting pictures to a
frame, colours by name, RIFE in-betweens, the MP4 writer and the synthesised soundtrack."""
