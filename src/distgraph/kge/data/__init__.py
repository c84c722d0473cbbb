"""A knowledge graph's input: DGL-KE's file formats and dictionaries read into a dataset in
bounded memory (`formats`, with `text`, `triples`, `store`, `names`), a seeded synthetic KG of
any size (`generate`), and the dataset partitioned for the machines that train on it (`partition`)."""
