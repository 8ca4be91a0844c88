"""sglang's own code from its published wheels: import graphs, models, patch ranges."""
