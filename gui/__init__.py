"""The Qt side of attnscope: windows and views that observe the engine, never the reverse."""
