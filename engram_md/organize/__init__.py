"""How facts are grouped and linked: topics, memory boxes, traces, the entity/time/causal graph."""
