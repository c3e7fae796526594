"""Hostile chat templates (issue 58): each bypass took gigabytes or hung past 90 s inside one
template line, before the template ran in a child with a memory cap and a hard deadline;
tests/bad_inputs/test_template_limits.py and test_chat_templates.py refuse them all."""
from __future__ import annotations

BYPASSES = {
    "format width": "{{ '{:>7000000000}'.format(1) }}",
    "center": "{{ 'x'.center(7000000000) }}",
    "ljust": "{{ 'x'.ljust(7000000000) }}",
    "rjust": "{{ 'x'.rjust(7000000000) }}",
    "percent width": "{{ '%7000000000d' % 1 }}",
    "chained replace": "{{ ('x' * 1000000).replace('x', 'xxxx').replace('x', 'xxxx').replace('x', 'xxxx')"
                       ".replace('x', 'xxxx').replace('x', 'xxxx').replace('x', 'xxxx') }}",
    "join": "{{ ('y' * 4000000).join(['a'] * 4000000) }}",
    "sorts of a 16M list": "{{ (('x' * 16000000)|list|sort|sort|sort|sort|sort|sort|sort|sort)|length }}",
    "deep ifs": "{% if true %}" * 3000 + "x" + "{% endif %}" * 3000,
    "recursive macro": "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
    "tojson of a deep value": "{% set ns = namespace(v=[]) %}{% for i in range(100000) %}"
                              "{% set ns.v = [ns.v] %}{% endfor %}{{ ns.v|tojson }}",
}
