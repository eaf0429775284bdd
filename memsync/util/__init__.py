"""What every layer may use: file-system and platform helpers, errors, packaged resources."""
