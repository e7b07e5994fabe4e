"""hipfile-rs under other libraries' loaders, each opted into explicitly (nothing is patched on
import): :mod:`hipfile.integrations.transformers`."""
