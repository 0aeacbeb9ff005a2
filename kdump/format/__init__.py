"""Pure parsing: bytes and a position in, typed records out. No files are opened here."""
