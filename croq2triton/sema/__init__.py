"""Semantic analysis: scopes, types, shapes and static checks."""
