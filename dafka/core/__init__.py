"""Sans-IO node cores: they take messages and time and return effects."""
