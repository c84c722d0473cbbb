"""A knowledge graph's input: DGL-KE's file formats and dictionaries read into a dataset
(`formats`), and the dataset partitioned for the machines that train on it (`partition`)."""
