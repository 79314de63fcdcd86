//! Property tests of the pure wheel against a reference model.
