"""Wire codecs, one module per profile, plus the discovery beacons."""
