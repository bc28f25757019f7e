def act(target):
    return {"done": True, "target": target}
