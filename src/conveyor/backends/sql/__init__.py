"""The SQL engine: the algorithms every SQL store shares (workflow and unique-key
inserts, settling dependants, limits admission, periodic fire), written once against a
small :class:`~conveyor.backends.sql.dialect.Dialect` that says how one store spells
what differs (placeholders, list parameters, row locks, insert-or-ignore, clock, chunk
sizes). Each store keeps its own named queries where a statement must differ.

The operations (listing and filters, bulk actions, logs, import, queue statistics, the
audit) are mixins here too (:class:`~conveyor.backends.sql.ops.SqlOperations`), bound
to a store by the hooks of :class:`~conveyor.backends.sql.store.SqlStore`.

Example:
    >>> from conveyor.backends.sql.dialect import Dialect
    >>> Dialect.__name__
    'Dialect'
"""
