"""The public node objects: Producer, Consumer and Store, and what they share."""
