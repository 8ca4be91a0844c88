"""Fresh virtual environments: installs, the launcher, damaged installs."""
