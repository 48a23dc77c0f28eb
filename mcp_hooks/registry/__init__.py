"""The hooks a project has: discovery of HOOK.md folders, trust, change watching, the
bundled library.
"""
