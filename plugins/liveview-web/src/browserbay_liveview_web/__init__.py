"""browserbay live view in a web page (the ``liveview-web`` plugin)."""
