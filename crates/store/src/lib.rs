//! The store interface and its embedded (SQLite) and PostgreSQL backends.
