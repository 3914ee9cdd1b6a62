"""The cryptographic primitives the protocols need: the two digests (``hashing``) and ECIES in
the eth-crypto format of the encrypted responses (``ecies``).

Kept in one place so that a backend library is swapped, and audited, once.
"""
