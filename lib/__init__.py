"""Library for the executable book on attention and Transformers: one module per idea."""
