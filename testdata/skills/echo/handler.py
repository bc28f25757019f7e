def echo(message, count=1, nested=None):
    args = {"message": message, "count": count}
    if nested is not None:
        args["nested"] = nested
    return {"echo": args, "keys": len(args)}
