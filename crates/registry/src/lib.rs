//! Subjects, versions, ids, config and modes: the registry's domain logic.
