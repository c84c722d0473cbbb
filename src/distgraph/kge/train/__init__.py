"""Training a KGE model on the runtime: the trainer every command runs (`worker`), its
mini-batches with chunked negatives (`sampler`), DGL-KE's losses (`loss`), the embedding
tables with their row-wise Adagrad (`tables`), the device a trainer computes on (`device`)
and the rows it keeps there (`placement`), when its updates are applied (`updates`), and how
trainers report to the command that started them and what it prints (`report`)."""
