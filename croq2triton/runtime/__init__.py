"""Run-time support used by generated launchers: argument checks, allocation, descriptors, launch."""
