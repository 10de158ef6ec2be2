"""Ready-made models of real scenarios, each with its exact answers where a closed form exists."""
