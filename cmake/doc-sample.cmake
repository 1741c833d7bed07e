# Writes the first ```c block of the Markdown file DOC to OUT, as it stands,
# so that a test can compile it (test/unit: test-doc-sample). Run at build
# time: an edit of the doc rebuilds the test. Fails when DOC has no such block.
file(READ ${DOC} text)
string(FIND "${text}" "\n```c\n" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${DOC}: no ```c block")
endif()
math(EXPR start "${start} + 6")
# The doc's line of the block's first line, so that compiler errors point into the doc.
string(SUBSTRING "${text}" 0 ${start} before)
string(REGEX MATCHALL "\n" newlines "${before}")
list(LENGTH newlines line)
math(EXPR line "${line} + 1")
string(SUBSTRING "${text}" ${start} -1 rest)
string(FIND "${rest}" "\n```" end)
if(end EQUAL -1)
  message(FATAL_ERROR "${DOC}: the first ```c block does not end")
endif()
math(EXPR end "${end} + 1")
string(SUBSTRING "${rest}" 0 ${end} code)
file(WRITE ${OUT}.tmp "/* Generated from ${DOC} by cmake/doc-sample.cmake. Do not edit. */\n#line ${line} \"${DOC}\"\n${code}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUT}.tmp ${OUT})
file(REMOVE ${OUT}.tmp)
