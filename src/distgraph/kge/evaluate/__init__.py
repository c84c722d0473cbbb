"""Link-prediction evaluation: the metrics (`metrics`), ranking on the shards where the entity
rows live (`ranking`), and the evaluation of a trainer's share or of a saved model built on it
(`link_prediction`)."""
