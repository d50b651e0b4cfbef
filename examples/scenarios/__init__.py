"""A CES scenario run offline: a booking agent, a simulated user and judges on a stand-in."""
