"""Training a KGE model on the runtime: the trainer every command runs (`worker`), its
mini-batches with chunked negatives (`sampler`), DGL-KE's losses (`loss`) and the embedding
tables with their row-wise Adagrad (`tables`)."""
