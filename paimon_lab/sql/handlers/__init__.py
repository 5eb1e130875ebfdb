"""Statement handlers, one module per concept. Each handler is a function ``(ctx, st)`` of a
:class:`~paimon_lab.sql.context.SessionContext` and a :class:`~paimon_lab.sql.context.Statement`,
named in ``dispatch.HANDLERS``; handlers import neither each other nor the session."""
