__version__ = "0.1.0"

#: Version of the keeper socket protocol. A client and keeper that disagree on it (or on
#: ``__version__``) do not talk: the client asks the old keeper to exit and starts its own.
PROTOCOL = 1
