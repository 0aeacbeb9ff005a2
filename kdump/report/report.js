(function(){
  var pages = document.querySelectorAll('template.page'), shown = -1;
  var hidden = {};
  function applyFilter(root){
    root.querySelectorAll('tr[data-severity]').forEach(function(tr){
      tr.style.display = hidden[tr.getAttribute('data-severity')] ? 'none' : '';
    });
  }
  function show(n){
    if(n === shown || n < 0 || n >= pages.length) return;
    var box = document.getElementById('pages');
    box.replaceChildren(pages[n].content.cloneNode(true));
    shown = n;
    document.getElementById('page-no').textContent = (n + 1) + ' / ' + pages.length;
    applyFilter(box); sortable(box);
  }
  function cell(tr, i){
    var td = tr.children[i]; if(!td) return '';
    var v = td.getAttribute('data-v'); return v === null ? td.textContent : parseFloat(v);
  }
  function sortable(root){
    root.querySelectorAll('table.sortable').forEach(function(t){
      if(t.dataset.ready) return; t.dataset.ready = '1';
      t.querySelectorAll('th').forEach(function(th, i){
        th.addEventListener('click', function(){
          var body = t.tBodies[0], rows = Array.prototype.slice.call(body.rows);
          var dir = th.dataset.dir === 'asc' ? -1 : 1; th.dataset.dir = dir > 0 ? 'asc' : 'desc';
          rows.sort(function(a, b){ var x = cell(a, i), y = cell(b, i);
            return (x < y ? -1 : x > y ? 1 : 0) * dir; });
          rows.forEach(function(r){ body.appendChild(r); });
        });
      });
    });
  }
  document.querySelectorAll('input[data-filter]').forEach(function(box){
    box.addEventListener('change', function(){
      hidden[box.getAttribute('data-filter')] = !box.checked; applyFilter(document);
    });
  });
  document.getElementById('prev').addEventListener('click', function(){ show(shown - 1); });
  document.getElementById('next').addEventListener('click', function(){ show(shown + 1); });
  function follow(){
    var id = decodeURIComponent(location.hash.slice(1));
    for(var n = 0; n < pages.length; n++){
      if(pages[n].content.getElementById(id)){
        show(n);
        var el = document.getElementById(id); if(el) el.scrollIntoView();
        return;
      }
    }
  }
  window.addEventListener('hashchange', follow);
  sortable(document);
  show(0);
  if(location.hash) follow();
  document.body.setAttribute('data-ready', '1');
})();
