"""Documents as people have them (PDF, Word, PowerPoint, spreadsheets, HTML, EPUB, notebooks,
RTF, OpenDocument): their kind told from their bytes, and their text as markdown in which a
marker line says where each page, slide, sheet, chapter or cell begins.

Nothing here is imported until a document is added: :mod:`.kinds` sniffs a file's first bytes,
:mod:`.converter` hands the conversion to a worker process (:mod:`.worker`) that a deadline or a
memory cap can stop, and the converters of each format (:mod:`.pdf`, :mod:`.office`,
:mod:`.sheets`, :mod:`.markup`, :mod:`.notebooks`) import their library only when they run.
"""
